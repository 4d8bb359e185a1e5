package io.rxe4j.core;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.rxe4j.core.device.RxeDevice;
import io.rxe4j.core.wire.ArchitectureViolationFixture;
import io.rxe4j.core.wire.Bth;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine's import rules ({@code docs/architecture.md}, "Packages and what may import what"),
 * checked on the compiled main classes with ArchUnit. Floors, lowest first: {@code memory} and
 * {@code cq}; {@code wire}; {@code stats} and {@code policy}; {@code qp}; {@code rc}, {@code ud} and {@code uc};
 * {@code tid}; {@code device}. A package may use only packages on lower floors (and the API, {@code
 * io.rxe4j.verbs..}); nothing imports upward, so RC never names TID, a policy never names a QP, and
 * only {@code device} names a lane. A failure names the rule and each offending dependency
 * ({@code file:line}).
 */
class ArchitectureTest {
    private static JavaClasses engine;
    private static JavaClasses api;

    @BeforeAll
    static void importClasses() {
        ClassFileImporter importer = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS);
        engine = importer.importPackages("io.rxe4j.core");
        api = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.rxe4j.verbs");
    }

    /** The floors of the engine; each layer may be used only by the layers above it. */
    static com.tngtech.archunit.library.Architectures.LayeredArchitecture floors() {
        return layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("memory").definedBy("io.rxe4j.core.memory..")
                .layer("cq").definedBy("io.rxe4j.core.cq..")
                .layer("wire").definedBy("io.rxe4j.core.wire..")
                .layer("stats").definedBy("io.rxe4j.core.stats..")
                .layer("policy").definedBy("io.rxe4j.core.policy..")
                .layer("qp").definedBy("io.rxe4j.core.qp..")
                .layer("rc").definedBy("io.rxe4j.core.rc..")
                .layer("tid").definedBy("io.rxe4j.core.tid..")
                .layer("ud").definedBy("io.rxe4j.core.ud..")
                .layer("uc").definedBy("io.rxe4j.core.uc..")
                .layer("device").definedBy("io.rxe4j.core.device..")
                .whereLayer("device").mayNotBeAccessedByAnyLayer()
                .whereLayer("ud").mayOnlyBeAccessedByLayers("device")
                .whereLayer("uc").mayOnlyBeAccessedByLayers("device")
                .whereLayer("tid").mayOnlyBeAccessedByLayers("device")
                .whereLayer("rc").mayOnlyBeAccessedByLayers("tid", "device")
                .whereLayer("qp").mayOnlyBeAccessedByLayers("rc", "tid", "ud", "uc", "device")
                .whereLayer("policy").mayOnlyBeAccessedByLayers("qp", "rc", "tid", "ud", "uc", "device")
                .whereLayer("stats").mayOnlyBeAccessedByLayers("policy", "qp", "rc", "tid", "ud", "uc", "device")
                .whereLayer("wire").mayOnlyBeAccessedByLayers("stats", "policy", "qp", "rc", "tid", "ud", "uc", "device")
                .whereLayer("cq").mayOnlyBeAccessedByLayers("qp", "rc", "tid", "ud", "uc", "device")
                .whereLayer("memory").mayOnlyBeAccessedByLayers("wire", "qp", "rc", "tid", "ud", "uc", "device");
    }

    @Test
    void enginePackagesImportOneWay() {
        floors().because("the engine's packages import one way (docs/architecture.md)").check(engine);
    }

    @Test
    void noPackageCycleInTheEngine() {
        slices().matching("io.rxe4j.core.(*)..").should().beFreeOfCycles()
                .because("a cycle makes neither package testable or replaceable alone")
                .check(engine);
    }

    @Test
    void theApiNamesNoEngineClass() {
        noClasses().should().dependOnClassesThat().resideInAPackage("io.rxe4j.core..")
                .because("rxe-verbs is the API; the engine is a provider found at run time (ServiceLoader)")
                .check(api);
    }

    /**
     * No public mutable field, except in the slot records that carry one work request or resource
     * from engine to engine (rdma_rxe's {@code struct rxe_send_wqe}, {@code rxe_recv_wqe}, {@code
     * resp_res}; hfi1's flow segment): preallocated, owned by whichever engine the slot's state names.
     */
    @Test
    void noEngineFieldIsPublicAndMutable() {
        fields().that().areDeclaredInClassesThat().resideInAPackage("io.rxe4j.core..")
                .and().areDeclaredInClassesThat().doNotHaveFullyQualifiedName("io.rxe4j.core.qp.SendWqe")
                .and().areDeclaredInClassesThat().doNotHaveFullyQualifiedName("io.rxe4j.core.qp.RecvWqe")
                .and().areDeclaredInClassesThat().doNotHaveFullyQualifiedName("io.rxe4j.core.qp.TidSegment")
                .and().areDeclaredInClassesThat().doNotHaveFullyQualifiedName("io.rxe4j.core.rc.ResponderResources$Entry")
                .and().arePublic()
                .should().beFinal()
                .because("state has one writer: other packages call methods, they do not write fields")
                .check(engine);
    }

    /** The floors rule is not vacuous: a wire class that names the device breaks it, by name. */
    @Test
    void theFloorsRuleCatchesAnUpwardImport() {
        JavaClasses withViolation = new ClassFileImporter().importClasses(ArchitectureViolationFixture.class,
                RxeDevice.class, Bth.class);
        EvaluationResult result = floors().evaluate(withViolation);
        assertThat(result.hasViolation()).isTrue();
        assertThat(result.getFailureReport().getDetails())
                .anyMatch(d -> d.contains("ArchitectureViolationFixture") && d.contains("RxeDevice"));
    }
}
