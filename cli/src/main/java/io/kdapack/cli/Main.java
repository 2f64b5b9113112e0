package io.kdapack.cli;

import io.kdapack.cli.bench.BenchCommand;
import picocli.CommandLine.Command;
import picocli.CommandLine;

/** Entry point of the {@code kdapack} command line. */
@Command(name = "kdapack", mixinStandardHelpOptions = true, version = "kdapack 0.1.0",
        description = "Train and serve hybrid Kimi Delta Attention models on packed variable-length sequences.",
        subcommands = {TrainCommand.class, ServeCommand.class, GenerateCommand.class, EvalCommand.class, OpCommand.class,
                BenchCommand.class, DataCommand.class})
public final class Main {

    /** Exit code for bad input (unreadable files, invalid arguments), as picocli uses for usage errors. */
    public static final int EXIT_BAD_INPUT = 2;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The configured command line: bad input ends in one line on stderr and exit code 2, not a stack trace. */
    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new Main());
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("kdapack " + commandLine.getCommandName() + ": " + oneLine(ex));
            return ex instanceof IllegalArgumentException || ex instanceof java.io.IOException
                    ? EXIT_BAD_INPUT : 1;
        });
        return cli;
    }

    private static String oneLine(Throwable ex) {
        String message = ex.getMessage() == null ? ex.getClass().getSimpleName() : ex.getMessage();
        return message.replace('\n', ' ');
    }
}
