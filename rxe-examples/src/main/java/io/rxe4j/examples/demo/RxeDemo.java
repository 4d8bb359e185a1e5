package io.rxe4j.examples.demo;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point: {@code RxeDemo} (or {@code RxeDemo demo}) runs both processes; {@code server} and
 * {@code client} run one side each.
 */
@Command(name = "rxe-demo", mixinStandardHelpOptions = true,
        versionProvider = io.rxe4j.examples.VersionProvider.class,
        subcommands = {DemoLauncher.class, DemoServer.class, DemoClient.class},
        description = "rxe4j two-process RC verbs demo over RoCEv2/UDP.")
public final class RxeDemo implements Runnable {
    @Override
    public void run() {
        System.exit(new CommandLine(new DemoLauncher()).execute());
    }

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(new CommandLine(new RxeDemo()).execute(args));
    }
}
