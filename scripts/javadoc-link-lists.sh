#!/usr/bin/env bash
# Regenerates the element lists the Javadoc of rxe-verbs and rxe-net links with, offline
# (pom.xml, maven-javadoc-plugin <offlineLinks>): src/javadoc/links/jdk/element-list from a JDK 25
# (its modules' unqualified exports) and src/javadoc/links/netty/element-list from the Netty jars
# in ~/.m2 (every package of the Netty artifacts rxe-net compiles against).
# Run it after a JDK or Netty upgrade: scripts/javadoc-link-lists.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=../bin/.rxe-java
. "$root/bin/.rxe-java"
java="$(rxe_find_java)" || exit 1
netty="$(sed -n 's:.*<netty.version>\(.*\)</netty.version>.*:\1:p' "$root/rxe4j-bom/pom.xml")"
out="$root/src/javadoc/links"
mkdir -p "$out/jdk" "$out/netty"

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/ElementList.java" <<'JAVA'
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.util.Comparator;

public class ElementList {
    public static void main(String[] args) {
        ModuleFinder.ofSystem().findAll().stream().map(ModuleReference::descriptor)
                .filter(d -> d.name().startsWith("java.") || d.name().startsWith("jdk."))
                .sorted(Comparator.comparing(ModuleDescriptor::name))
                .forEach(d -> {
                    var pkgs = d.exports().stream().filter(e -> !e.isQualified())
                            .map(ModuleDescriptor.Exports::source).sorted().toList();
                    if (!pkgs.isEmpty()) {
                        System.out.println("module:" + d.name());
                        pkgs.forEach(System.out::println);
                    }
                });
    }
}
JAVA
"$java" "$tmp/ElementList.java" > "$out/jdk/element-list"

: > "$tmp/pkgs"
for a in netty-buffer netty-common netty-transport netty-transport-classes-epoll netty-transport-native-unix-common; do
    jar="$HOME/.m2/repository/io/netty/$a/$netty/$a-$netty.jar"
    [ -f "$jar" ] || { echo "missing $jar (run mvn -B package -DskipTests first)" >&2; exit 1; }
    unzip -Z1 "$jar" | grep -E '^io/netty/.*\.class$' | grep -v '^META-INF/' | sed 's:/[^/]*$::; s:/:.:g' >> "$tmp/pkgs"
done
sort -u "$tmp/pkgs" > "$out/netty/element-list"
echo "wrote $out/jdk/element-list ($(grep -vc '^module:' "$out/jdk/element-list") packages) and" \
     "$out/netty/element-list ($(wc -l < "$out/netty/element-list") packages, Netty $netty)"
