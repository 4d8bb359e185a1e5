/** rxe4j examples: the two-process demo, its TCP bootstrap, and CLIs. */
package io.rxe4j.examples;
