package io.kdapack.actors.cluster.parallel;

import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.parallel.GradientExchange;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Runs rank r of an N-rank data-parallel job ({@link RankSpec}) on this member: a {@link Trainer} that reads only block
 * r of each step's micro-batches, on a thread of its own, joined to the other ranks by a {@link PekkoGradientExchange}.
 * docs/cluster.md, "Data parallel".
 *
 * <p>Life cycle, as the job's coordinator drives it:
 * <ol>
 *   <li>spawn {@code RankRunner.create(spec)} on each of N workers (rank r's spec on the r-th);</li>
 *   <li>send every rank the same {@link Peers} (the N runner refs in rank order); the ranks introduce their chunk
 *       receivers to each other and start training when all have;</li>
 *   <li>the listener gets {@link RankEvent.Started}, a {@link RankEvent.StepDone} per step (rank 0 also
 *       {@link RankEvent.CheckpointWritten}), then {@link RankEvent.Finished} or {@link RankEvent.Failed}; then the
 *       runner stops itself (after a failure at once; after {@code Finished} once every rank has finished, or after
 *       {@code kdapack.parallel.timeout}).</li>
 * </ol>
 * {@link Stop} ends the run after the step under way (no half-step is applied; reported as {@code Failed} with reason
 * "stopped"). A peer that terminates, or stays silent longer than {@code kdapack.parallel.timeout} when it is needed,
 * fails the rank with a reason naming it, so a dead worker never leaves the others hanging.
 */
public final class RankRunner extends AbstractBehavior<RankRunner.Command> {

    /** The runner's messages. */
    public sealed interface Command permits Peers, Stop, ControlMessage, Internal {
    }

    /**
     * The job's N runners in rank order (this one at its rank); sent once to every rank by the coordinator.
     */
    public record Peers(List<ActorRef<Command>> ranks) implements Command, ParallelMessage {
        public Peers {
            ranks = List.copyOf(ranks);
        }
    }

    /** End the run after the step under way; the rank reports {@link RankEvent.Failed} with reason "stopped". */
    public record Stop(String reason) implements Command, ParallelMessage {
    }

    /** What the runner tells itself. */
    sealed interface Internal extends Command {
    }

    private record TrainingEnded(boolean finished) implements Internal {
    }

    private record LingerOver() implements Internal {
    }

    private record HandshakeTimedOut() implements Internal {
    }

    /** The name of the chunk receiver child; list its path in Artery's large-message destinations ({@link ParallelTransport}). */
    public static final String GRADIENTS = "kdapack-gradients";

    private final RankSpec spec;
    private final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private final ActorRef<GradientMessage> gradients;
    private final AtomicBoolean stopping = new AtomicBoolean();
    private List<ActorRef<Command>> peers;
    private final List<ActorRef<GradientMessage>> receivers;
    private int introduced;
    private Thread training;
    /** The ranks whose training thread completed the run (this one included once it has). */
    private final java.util.Set<Integer> done = new java.util.HashSet<>();

    public static Behavior<Command> create(RankSpec spec) {
        return Behaviors.setup(context -> new RankRunner(context, spec));
    }

    private RankRunner(ActorContext<Command> context, RankSpec spec) {
        super(context);
        this.spec = spec;
        this.gradients = context.spawn(receiver(inbox), GRADIENTS);
        this.receivers = new ArrayList<>(Collections.nCopies(spec.ranks(), (ActorRef<GradientMessage>) null));
        this.receivers.set(spec.rank(), gradients);
        context.scheduleOnce(spec.exchange().timeout(), context.getSelf(), new HandshakeTimedOut());
    }

    /** The child that receives chunks and acknowledgements (on the large-message lane) for the training thread. */
    private static Behavior<GradientMessage> receiver(BlockingQueue<Object> inbox) {
        return Behaviors.receiveMessage(message -> {
            inbox.add(message);
            return Behaviors.same();
        });
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Peers.class, this::onPeers)
                .onMessage(ControlMessage.Hello.class, this::onHello)
                .onMessage(ControlMessage.GatherPart.class, part -> {
                    inbox.add(part);
                    return this;
                })
                .onMessage(Stop.class, this::onStop)
                .onMessage(TrainingEnded.class, this::onTrainingEnded)
                .onMessage(ControlMessage.Done.class, this::onPeerDone)
                .onMessage(LingerOver.class, over -> Behaviors.stopped())
                .onMessage(HandshakeTimedOut.class, this::onHandshakeTimedOut)
                .onSignal(Terminated.class, this::onPeerTerminated)
                .onSignal(PostStop.class, this::onPostStop)
                .build();
    }

    private Behavior<Command> onPeers(Peers message) {
        if (peers != null) {
            return this;
        }
        if (message.ranks().size() != spec.ranks()) {
            return fail("Peers lists " + message.ranks().size() + " ranks, train.data_parallel is " + spec.ranks());
        }
        if (!message.ranks().get(spec.rank()).equals(getContext().getSelf())) {
            return fail("Peers lists " + message.ranks().get(spec.rank()) + " at rank " + spec.rank()
                    + ", not this runner (" + getContext().getSelf() + ")");
        }
        peers = message.ranks();
        for (int r = 0; r < peers.size(); r++) {
            if (r != spec.rank()) {
                getContext().watch(peers.get(r));
                peers.get(r).tell(new ControlMessage.Hello(spec.rank(), gradients));
            }
        }
        return startWhenIntroduced();
    }

    private Behavior<Command> onHello(ControlMessage.Hello hello) {
        if (hello.fromRank() < 0 || hello.fromRank() >= spec.ranks() || receivers.get(hello.fromRank()) != null) {
            return this;
        }
        receivers.set(hello.fromRank(), hello.gradients());
        introduced++;
        return startWhenIntroduced();
    }

    private Behavior<Command> startWhenIntroduced() {
        if (peers == null || introduced < spec.ranks() - 1 || training != null) {
            return this;
        }
        GradientExchange exchange = spec.ranks() == 1 ? GradientExchange.single()
                : new PekkoGradientExchange(spec.rank(), peers, receivers, inbox, spec.exchange());
        ActorRef<Command> self = getContext().getSelf();
        training = Thread.ofPlatform().name("kdapack-rank-" + spec.jobId() + "-" + spec.rank()).daemon().unstarted(() ->
                self.tell(new TrainingEnded(train(exchange))));
        training.start();
        return this;
    }

    /**
     * The training thread: restore, steps, checkpoints (rank 0), the final event.
     *
     * @return whether the run completed
     */
    private boolean train(GradientExchange exchange) {
        long stepsDone = 0;
        try (Trainer trainer = Trainer.create(spec.config(), spec.models(), spec.corpora(), spec.checkpointDir(),
                exchange)) {
            stepsDone = trainer.restoreLatest().orElse(0L);
            spec.listener().tell(new RankEvent.Started(spec.jobId(), spec.rank(), stepsDone));
            while (!trainer.finished()) {
                if (stopping.get()) {
                    throw new IllegalStateException("stopped");
                }
                StepResult result = trainer.step();
                stepsDone = trainer.stepsDone();
                spec.listener().tell(new RankEvent.StepDone(spec.jobId(), spec.rank(), result, trainer.lastTiming()));
                if (spec.rank() == 0 && trainer.checkpointDue()) {
                    Path written = trainer.saveCheckpoint();
                    spec.listener().tell(new RankEvent.CheckpointWritten(spec.jobId(), 0, stepsDone, written.toString()));
                }
            }
            spec.listener().tell(new RankEvent.Finished(spec.jobId(), spec.rank(), stepsDone));
            return true;
        } catch (Throwable e) {
            String reason = stopping.get() ? "stopped" : e.getMessage() == null ? e.toString() : e.getMessage();
            spec.listener().tell(new RankEvent.Failed(spec.jobId(), spec.rank(), stepsDone, reason));
            return false;
        }
    }

    /**
     * A failed rank stops at once, so that its peers learn it from their watch. A rank that completed the run lingers
     * until every peer has completed too: its part of the last all-gather may still be on its way to a slower peer, and
     * its termination must not overtake it (the watch's notification travels on another lane).
     */
    private Behavior<Command> onTrainingEnded(TrainingEnded ended) {
        if (!ended.finished() || spec.ranks() == 1) {
            return Behaviors.stopped();
        }
        done.add(spec.rank());
        for (int r = 0; r < peers.size(); r++) {
            if (r != spec.rank()) {
                peers.get(r).tell(new ControlMessage.Done(spec.rank()));
            }
        }
        getContext().scheduleOnce(spec.exchange().timeout(), getContext().getSelf(), new LingerOver());
        return stopWhenAllDone();
    }

    private Behavior<Command> onPeerDone(ControlMessage.Done message) {
        done.add(message.fromRank());
        return stopWhenAllDone();
    }

    private Behavior<Command> stopWhenAllDone() {
        return done.contains(spec.rank()) && done.size() == spec.ranks() ? Behaviors.stopped() : this;
    }

    private Behavior<Command> onStop(Stop stop) {
        stopping.set(true);
        inbox.add(new PekkoGradientExchange.Interruption("stopped: " + stop.reason()));
        if (training == null) {
            spec.listener().tell(new RankEvent.Failed(spec.jobId(), spec.rank(), 0, "stopped"));
            return Behaviors.stopped();
        }
        return this;
    }

    private Behavior<Command> onHandshakeTimedOut(HandshakeTimedOut timeout) {
        if (training != null) {
            return this;
        }
        return fail("the ranks did not all meet within " + spec.exchange().timeout() + " (kdapack.parallel.timeout): "
                + (peers == null ? "no Peers message" : (introduced + 1) + " of " + spec.ranks() + " ranks known"));
    }

    private Behavior<Command> onPeerTerminated(Terminated terminated) {
        int lost = peers == null ? -1 : peers.indexOf(terminated.getRef());
        if (done.contains(spec.rank())) {
            // This rank completed the run; a peer that stops now has nothing more to send it.
            done.add(lost);
            return stopWhenAllDone();
        }
        String reason = "rank " + lost + " (" + terminated.getRef().path() + ") terminated";
        if (training == null) {
            return fail(reason);
        }
        inbox.add(new PekkoGradientExchange.Interruption(reason));
        return this;
    }

    /** Fails before training started: reports and stops. */
    private Behavior<Command> fail(String reason) {
        spec.listener().tell(new RankEvent.Failed(spec.jobId(), spec.rank(), 0, reason));
        return Behaviors.stopped();
    }

    private Behavior<Command> onPostStop(PostStop signal) {
        if (training != null && training.isAlive()) {
            stopping.set(true);
            inbox.add(new PekkoGradientExchange.Interruption("the rank's actor stopped"));
        }
        return this;
    }
}
