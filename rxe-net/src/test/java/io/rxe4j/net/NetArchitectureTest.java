package io.rxe4j.net;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * rxe-net's packages import one way: the real transport ({@code udp}) knows nothing of the
 * simulation, the wrappers ({@code fault}, {@code pcap}) or the in-JVM fabric; the virtual scheduler
 * ({@code sim}) knows nothing of any transport, and the in-JVM fabric may use it.
 */
class NetArchitectureTest {
    private static final JavaClasses NET = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.rxe4j.net");

    @Test
    void theUdpTransportDependsOnNoSimulationOrWrapper() {
        noClasses().that().resideInAPackage("io.rxe4j.net.udp..").should().dependOnClassesThat()
                .resideInAnyPackage("io.rxe4j.net.sim..", "io.rxe4j.net.inproc..", "io.rxe4j.net.fault..",
                        "io.rxe4j.net.pcap..")
                .check(NET);
    }

    @Test
    void theVirtualSchedulerDependsOnNoTransport() {
        noClasses().that().resideInAPackage("io.rxe4j.net.sim..").should().dependOnClassesThat()
                .resideInAnyPackage("io.rxe4j.net.udp..", "io.rxe4j.net.inproc..", "io.rxe4j.net.fault..",
                        "io.rxe4j.net.pcap..")
                .check(NET);
    }
}
