package io.rxe4j.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How {@link SharedDir} finds the shared folder. */
class SharedDirTest {

    private static Path makeShared(Path dir) throws IOException {
        Files.createDirectories(dir.resolve("protocol"));
        Files.writeString(dir.resolve(SharedDir.MARKER), "# facts\n");
        return dir;
    }

    @Test
    void propertyWins(@TempDir Path tmp) throws IOException {
        Path shared = makeShared(tmp.resolve("elsewhere/shared-copy"));
        makeShared(tmp.resolve("shared"));
        assertThat(SharedDir.locate(shared.toString(), tmp.resolve("main"))).isEqualTo(shared);
    }

    @Test
    void walksUpToASiblingOfTheCheckout(@TempDir Path tmp) throws IOException {
        Path shared = makeShared(tmp.resolve("shared"));
        Path module = Files.createDirectories(tmp.resolve("main/rxe-core/target"));
        assertThat(SharedDir.locate(null, module)).isEqualTo(shared);
        assertThat(SharedDir.locate("  ", tmp.resolve("main"))).isEqualTo(shared);
    }

    @Test
    void aPropertyPointingNowhereFallsBackToTheWalk(@TempDir Path tmp) throws IOException {
        Path shared = makeShared(tmp.resolve("shared"));
        assertThat(SharedDir.locate(tmp.resolve("nope").toString(), tmp.resolve("main"))).isEqualTo(shared);
    }

    @Test
    void aFolderWithoutTheMarkerIsNotIt(@TempDir Path tmp) throws IOException {
        Files.createDirectories(tmp.resolve("a/shared/protocol"));
        Path deeper = Files.createDirectories(tmp.resolve("a/main/module"));
        Path found = SharedDir.locate(null, deeper);
        // may find a real shared/ above the temp folder, never the unmarked one
        assertThat(found).isNotEqualTo(tmp.resolve("a/shared"));
    }

    @Test
    void pathFailsClearlyOrAnswersConsistently() {
        if (SharedDir.present()) {
            assertThat(SharedDir.path().resolve(SharedDir.MARKER)).isRegularFile();
            assertThat(SharedDir.resolve("protocol")).isDirectory();
        } else {
            assertThatIllegalStateException().isThrownBy(SharedDir::path).withMessageContaining(SharedDir.PROPERTY);
        }
    }
}
