# Sourced by the run scripts: defines find_java25, which prints the path of a JDK 25 `java`
# (JAVA_HOME if it is a JDK 25, else the first /usr/lib/jvm/*25* that is) or fails.

is25() {
    "$1" -XshowSettings:properties -version 2>&1 | grep -Eq '^\s*java\.specification\.version = 25$'
}

find_java25() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && is25 "$JAVA_HOME/bin/java"; then
        echo "$JAVA_HOME/bin/java"
        return 0
    fi
    local d
    for d in /usr/lib/jvm/*25*; do
        if [ -x "$d/bin/java" ] && is25 "$d/bin/java"; then
            echo "$d/bin/java"
            return 0
        fi
    done
    return 1
}
