/** The two-process demo: a server and a client process doing RC verbs over RoCEv2/UDP on loopback. */
package io.rxe4j.examples.demo;
