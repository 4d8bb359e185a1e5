package io.rxe4j.core.qp;

import static io.rxe4j.verbs.QpAttrMask.ACCESS_FLAGS;
import static io.rxe4j.verbs.QpAttrMask.ALT_PATH;
import static io.rxe4j.verbs.QpAttrMask.AV;
import static io.rxe4j.verbs.QpAttrMask.CAP;
import static io.rxe4j.verbs.QpAttrMask.CUR_STATE;
import static io.rxe4j.verbs.QpAttrMask.DEST_QPN;
import static io.rxe4j.verbs.QpAttrMask.EN_SQD_ASYNC_NOTIFY;
import static io.rxe4j.verbs.QpAttrMask.MAX_DEST_RD_ATOMIC;
import static io.rxe4j.verbs.QpAttrMask.MAX_QP_RD_ATOMIC;
import static io.rxe4j.verbs.QpAttrMask.MIN_RNR_TIMER;
import static io.rxe4j.verbs.QpAttrMask.PATH_MIG_STATE;
import static io.rxe4j.verbs.QpAttrMask.PATH_MTU;
import static io.rxe4j.verbs.QpAttrMask.PKEY_INDEX;
import static io.rxe4j.verbs.QpAttrMask.PORT;
import static io.rxe4j.verbs.QpAttrMask.QKEY;
import static io.rxe4j.verbs.QpAttrMask.RETRY_CNT;
import static io.rxe4j.verbs.QpAttrMask.RNR_RETRY;
import static io.rxe4j.verbs.QpAttrMask.RQ_PSN;
import static io.rxe4j.verbs.QpAttrMask.SQ_PSN;
import static io.rxe4j.verbs.QpAttrMask.STATE;
import static io.rxe4j.verbs.QpAttrMask.TIMEOUT;
import static io.rxe4j.verbs.QpState.ERR;
import static io.rxe4j.verbs.QpState.INIT;
import static io.rxe4j.verbs.QpState.RESET;
import static io.rxe4j.verbs.QpState.RTR;
import static io.rxe4j.verbs.QpState.RTS;
import static io.rxe4j.verbs.QpState.SQD;
import static io.rxe4j.verbs.QpState.SQE;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rxe4j.verbs.QpAttrMask;
import io.rxe4j.verbs.QpState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code rxe-facts.md} §6.1: the RC modify_qp table. */
class ModifyTableTest {
    private record Rule(QpState from, QpState to, int required, int optional) {}

    private static final int ALL_BITS = (1 << 21) - 1;

    private static List<Rule> rules() {
        List<Rule> r = new ArrayList<>();
        r.add(new Rule(RESET, RESET, 0, 0));
        r.add(new Rule(RESET, INIT, PKEY_INDEX | PORT | ACCESS_FLAGS, 0));
        r.add(new Rule(INIT, INIT, 0, PKEY_INDEX | PORT | ACCESS_FLAGS));
        r.add(new Rule(INIT, RTR, AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX));
        r.add(new Rule(RTR, RTS, TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE));
        r.add(new Rule(RTS, RTS, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER));
        r.add(new Rule(RTS, SQD, 0, EN_SQD_ASYNC_NOTIFY));
        r.add(new Rule(SQD, RTS, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE));
        r.add(new Rule(SQD, SQD, 0, PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
                | MAX_DEST_RD_ATOMIC | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE));
        for (QpState s : new QpState[] {INIT, RTR, RTS, SQD, SQE, ERR}) {
            r.add(new Rule(s, RESET, 0, 0));
            r.add(new Rule(s, ERR, 0, 0));
        }
        return r;
    }

    private static Rule rule(QpState from, QpState to) {
        for (Rule r : rules()) {
            if (r.from == from && r.to == to) {
                return r;
            }
        }
        return null;
    }

    private static String name(int bit) {
        String s = QpAttrMask.toString(bit);
        return s.substring(1, s.length() - 1);
    }

    @Test
    void everyLegalTransitionPassesWithRequiredAndWithAllOptional() {
        for (Rule r : rules()) {
            assertThatCode(() -> ModifyTable.check(r.from, r.to, STATE | r.required))
                    .as("%s -> %s required only", r.from, r.to).doesNotThrowAnyException();
            assertThatCode(() -> ModifyTable.check(r.from, r.to, STATE | r.required | r.optional))
                    .as("%s -> %s with every optional", r.from, r.to).doesNotThrowAnyException();
            for (int bit = 1; bit <= ALL_BITS; bit <<= 1) {
                if ((r.optional & bit) != 0) {
                    int b = bit;
                    assertThatCode(() -> ModifyTable.check(r.from, r.to, STATE | r.required | b))
                            .as("%s -> %s + %s", r.from, r.to, name(b)).doesNotThrowAnyException();
                }
            }
        }
    }

    @Test
    void typicalRcBringUpMasks() {
        assertThatCode(() -> {
            ModifyTable.check(RESET, INIT, STATE | PKEY_INDEX | PORT | ACCESS_FLAGS);
            ModifyTable.check(INIT, RTR, STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC
                    | MIN_RNR_TIMER);
            ModifyTable.check(RTR, RTS, STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC);
            ModifyTable.check(RTS, RTS, ACCESS_FLAGS); // no STATE bit: to = from
            ModifyTable.check(RTS, ERR, STATE);
            ModifyTable.check(ERR, RESET, STATE);
        }).doesNotThrowAnyException();
    }

    @Test
    void eachMissingRequiredAttributeIsNamed() {
        for (Rule r : rules()) {
            for (int bit = 1; bit <= ALL_BITS; bit <<= 1) {
                if ((r.required & bit) == 0) {
                    continue;
                }
                int mask = STATE | (r.required & ~bit);
                assertThatThrownBy(() -> ModifyTable.check(r.from, r.to, mask))
                        .as("%s -> %s without %s", r.from, r.to, name(bit))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("missing")
                        .hasMessageContaining(name(bit));
            }
        }
    }

    @Test
    void eachDisallowedAttributeIsNamed() {
        for (Rule r : rules()) {
            int allowed = STATE | r.required | r.optional;
            for (int bit = 1; bit <= ALL_BITS; bit <<= 1) {
                if ((allowed & bit) != 0) {
                    continue;
                }
                int mask = STATE | r.required | bit;
                if (bit == CUR_STATE && (r.from == INIT || r.from == RESET || r.from == ERR)) {
                    // rejected either as not allowed here or as CUR_STATE from a wrong state
                    assertThatThrownBy(() -> ModifyTable.check(r.from, r.to, mask))
                            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CUR_STATE");
                    continue;
                }
                assertThatThrownBy(() -> ModifyTable.check(r.from, r.to, mask))
                        .as("%s -> %s with %s", r.from, r.to, name(bit))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("does not accept")
                        .hasMessageContaining(name(bit));
            }
        }
        assertThatThrownBy(() -> ModifyTable.check(RESET, INIT, STATE | PKEY_INDEX | PORT | ACCESS_FLAGS | QKEY))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("QKEY");
        assertThatThrownBy(() -> ModifyTable.check(RTS, RTS, STATE | CAP))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CAP");
    }

    @Test
    void maskBitsAbove20AreRejected() {
        assertThatThrownBy(() -> ModifyTable.check(RTS, RTS, STATE | (1 << 21)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("200000");
        assertThatThrownBy(() -> ModifyTable.check(RTS, RTS, STATE | (1 << 25)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ModifyTable.check(RTS, RTS, STATE | Integer.MIN_VALUE))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void namedIllegalTransitions() {
        assertThatThrownBy(() -> ModifyTable.check(RESET, RTS, STATE | TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN
                | MAX_QP_RD_ATOMIC))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("RESET -> RTS");
        assertThatThrownBy(() -> ModifyTable.check(RESET, ERR, STATE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("RESET -> ERR");
        assertThatThrownBy(() -> ModifyTable.check(SQE, RTS, STATE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQE -> RTS");
        assertThatThrownBy(() -> ModifyTable.check(SQE, RTS, STATE | CUR_STATE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQE -> RTS");
    }

    @Test
    void everyTransitionNotInTheTableIsIllegal() {
        QpState[] states = {RESET, INIT, RTR, RTS, SQD, SQE, ERR, QpState.UNKNOWN};
        int count = 0;
        for (QpState from : states) {
            for (QpState to : states) {
                if (rule(from, to) != null) {
                    continue;
                }
                count++;
                assertThatThrownBy(() -> ModifyTable.check(from, to, ALL_BITS))
                        .as("%s -> %s", from, to)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining(from + " -> " + to);
            }
        }
        org.assertj.core.api.Assertions.assertThat(count).isEqualTo(64 - rules().size());
    }
}
