#!/usr/bin/env bash
# The consumer-project check (issue 24): deploys this build to a local file repository, then builds and
# runs a fresh project outside the build (src/it/consumer: the README's "Depend on rxe4j" as a user writes
# it, a main program over loopback UDP and a JUnit test with the rxe-test kit under loss) against that
# repository only: its own empty local repository, io.rxe4j artifacts from the deployed one, third-party
# artifacts (plugins, Netty, JUnit) from this machine's local repository with io/rxe4j hidden. Then the
# same test with a leaked MR must fail, naming the MR.
# Usage: scripts/consumer-check.sh   (MVN_FLAGS for the deploy build, e.g. -o; M2_REPO, JAVA25_HOME)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rxe4j-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
m2=${M2_REPO:-$HOME/.m2/repository}
java25=${JAVA25_HOME:-$(ls -d /usr/lib/jvm/*25* 2>/dev/null | head -1)}
[ -x "$java25/bin/java" ] || { echo "no JDK 25 found (set JAVA25_HOME)"; exit 1; }

echo "== deploy to $work/deploy"
(cd "$repo" && mvn -B -q ${MVN_FLAGS:-} -DskipTests deploy -DaltDeploymentRepository="local::file://$work/deploy") \
  > "$work/deploy.log" 2>&1 || { tail -40 "$work/deploy.log"; exit 1; }
for a in rxe4j-bom rxe4j-parent rxe-verbs rxe-core rxe-net rxe-test rxe-micrometer; do
  ls "$work/deploy/io/rxe4j/$a/"*/ >/dev/null 2>&1 || { echo "not deployed: $a"; exit 1; }
done
for a in rxe-tests rxe-examples; do
  [ ! -e "$work/deploy/io/rxe4j/$a" ] || { echo "deployed but not meant to be published: $a"; exit 1; }
done
for a in rxe-verbs rxe-core rxe-net rxe-test rxe-micrometer; do
  for c in sources javadoc; do
    ls "$work/deploy/io/rxe4j/$a/"*/*-"$c".jar >/dev/null 2>&1 || { echo "no $c jar deployed for $a"; exit 1; }
  done
done

# third-party artifacts only: the local repository without io/rxe4j
mkdir -p "$work/thirdparty/io"
for d in "$m2"/*; do [ "$(basename "$d")" = io ] || ln -s "$d" "$work/thirdparty/"; done
for d in "$m2"/io/*; do [ "$(basename "$d")" = rxe4j ] || ln -s "$d" "$work/thirdparty/io/"; done
cat > "$work/settings.xml" <<XML
<settings>
  <localRepository>$work/m2</localRepository>
  <mirrors><mirror><id>thirdparty</id><mirrorOf>central</mirrorOf><url>file://$work/thirdparty</url></mirror></mirrors>
  <profiles><profile><id>deployed</id>
    <repositories><repository><id>rxe4j-deployed</id><url>file://$work/deploy</url>
      <releases><enabled>true</enabled></releases><snapshots><enabled>true</enabled></snapshots></repository></repositories>
  </profile></profiles>
  <activeProfiles><activeProfile>deployed</activeProfile></activeProfiles>
</settings>
XML

cp -r "$repo/src/it/consumer" "$work/app"
cd "$work/app"
echo "== consumer: mvn verify (its test with the kit, on virtual time under loss)"
mvn -B -s "$work/settings.xml" verify dependency:build-classpath -Dmdep.outputFile=cp.txt > "$work/app.log" 2>&1 \
  || { tail -60 "$work/app.log"; exit 1; }
grep -E "Tests run: .*Failures: 0, Errors: 0" "$work/app.log" | tail -1
if grep -rl "rxe4j" "$work/m2/io/rxe4j" --include=_remote.repositories | xargs grep -L "rxe4j-deployed" | grep -q .; then
  echo "an io.rxe4j artifact did not come from the deployed repository"; exit 1
fi
echo "== consumer: its main program on JDK 25"
"$java25/bin/java" --enable-native-access=ALL-UNNAMED -cp "target/classes:$(cat cp.txt)" app.Main | tee "$work/main.log"
grep -q "hello from a consumer project" "$work/main.log"
echo "== consumer: the same test with a leaked MR must fail naming it"
if mvn -B -s "$work/settings.xml" -Dconsumer.leak=true test > "$work/leak.log" 2>&1; then
  echo "the leaking test passed"; exit 1
fi
grep -q "the test left 1 object(s) open" "$work/leak.log" && grep -q "MR MR{" "$work/leak.log" \
  || { echo "the leak run failed, but not naming the MR:"; tail -40 "$work/leak.log"; exit 1; }
grep -m1 "MR MR{" "$work/leak.log"
echo "CONSUMER CHECK PASSED"
