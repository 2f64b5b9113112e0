package io.kdapack.actors.events;

/** What a job's event stream carries: one {@link StepEvent} per optimizer step, then one {@link EndEvent}. */
public sealed interface JobEvent permits StepEvent, EndEvent {
}
