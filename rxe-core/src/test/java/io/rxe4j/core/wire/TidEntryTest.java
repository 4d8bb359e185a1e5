package io.rxe4j.core.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * {@link TidEntry} against {@code tid-opfn-facts.md} §3.5 (LEN bits 10:0 in 4 KiB pages, CTRL
 * bits 21:20, IDX bits 31:22) and §3.4 (at most 64 entries, raw host order = little-endian).
 */
class TidEntryTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void constants() {
        assertThat(TidEntry.LENGTH).isEqualTo(4);
        assertThat(TidEntry.MAX_ENTRIES).isEqualTo(64);
        assertThat(TidEntry.MAX_LIST_BYTES).isEqualTo(256);
        assertThat(TidEntry.PAGE_SIZE).isEqualTo(4096).isEqualTo(1 << TidEntry.PAGE_SHIFT);
        assertThat(TidEntry.CTRL_EVEN).isEqualTo(1);
        assertThat(TidEntry.CTRL_ODD).isEqualTo(2);
        assertThat(TidEntry.CTRL_PAIR).isEqualTo(3);
        // the three fields and the unused bits tile the 32 bits exactly
        int len = TidEntry.LEN_MASK;
        int ctrl = TidEntry.CTRL_MASK << TidEntry.CTRL_SHIFT;
        int idx = TidEntry.IDX_MASK << TidEntry.IDX_SHIFT;
        assertThat(len).isEqualTo(0x0000_07FF);
        assertThat(ctrl).isEqualTo(0x0030_0000);
        assertThat(idx).isEqualTo(0xFFC0_0000);
        assertThat(len | ctrl | idx | TidEntry.UNUSED_BITS).isEqualTo(-1);
        assertThat(len & ctrl | len & idx | ctrl & idx | TidEntry.UNUSED_BITS & (len | ctrl | idx)).isZero();
    }

    @Test
    void encodeByHand() {
        assertThat(TidEntry.encode(0, 0, 0)).isZero();
        assertThat(TidEntry.encode(5, 1, 64)).isEqualTo(0x0150_0040);
        assertThat(TidEntry.encode(0x155, 2, 64)).isEqualTo(0x5560_0040);
        assertThat(TidEntry.encode(0x3FF, 3, 0x7FF)).isEqualTo(0xFFF0_07FF);
        assertThat(TidEntry.encode(1, 0, 0)).isEqualTo(0x0040_0000);
        assertThat(TidEntry.encode(0, 1, 0)).isEqualTo(0x0010_0000);
        assertThat(TidEntry.encode(0, 0, 1)).isEqualTo(1);
    }

    @Test
    void encodeDecodeRoundTrips() {
        for (int idx : new int[] {0, 1, 5, 0x155, 0x200, 0x3FF}) {
            for (int ctrl = 0; ctrl < 4; ctrl++) {
                for (int len : new int[] {0, 1, 2, 64, 512, 0x400, 0x7FF}) {
                    int e = TidEntry.encode(idx, ctrl, len);
                    assertThat(TidEntry.idx(e)).isEqualTo(idx);
                    assertThat(TidEntry.ctrl(e)).isEqualTo(ctrl);
                    assertThat(TidEntry.lengthPages(e)).isEqualTo(len);
                    assertThat(TidEntry.lengthBytes(e)).isEqualTo(len * 4096);
                    assertThat(e & TidEntry.UNUSED_BITS).isZero();
                }
            }
        }
    }

    @Test
    void fieldsAreMaskedToTheirWidth() {
        int e = TidEntry.encode(0x400 | 9, 4 | 2, 0x800 | 17);
        assertThat(TidEntry.idx(e)).isEqualTo(9);
        assertThat(TidEntry.ctrl(e)).isEqualTo(2);
        assertThat(TidEntry.lengthPages(e)).isEqualTo(17);
        assertThat(e & TidEntry.UNUSED_BITS).as("LEN does not spill into the unused bits").isZero();
        // decoding ignores the unused bits
        assertThat(TidEntry.lengthPages(0x000F_F800 | 3)).isEqualTo(3);
        assertThat(TidEntry.ctrl(0x000F_F800)).isZero();
    }

    @Test
    void lengthInBytesIsPagesTimes4KiB() {
        assertThat(TidEntry.lengthBytes(TidEntry.encode(0, 1, 64))).isEqualTo(256 * 1024);
        assertThat(TidEntry.lengthBytes(TidEntry.encode(0, 1, 1))).isEqualTo(4096);
        assertThat(TidEntry.lengthBytes(TidEntry.encode(0, 1, 0x7FF))).isEqualTo(0x7FF * 4096);
    }

    @Test
    void entriesTravelLittleEndian() {
        ByteBuf b = Unpooled.wrappedBuffer(new byte[2 + 3 * 4 + 2]);
        TidEntry.write(b, 2, 0, 0x0150_0040);
        TidEntry.write(b, 2, 1, 0xFFF0_07FF);
        TidEntry.write(b, 2, 2, TidEntry.encode(0x155, TidEntry.CTRL_ODD, 64));
        assertThat(HEX.formatHex(b.array())).isEqualTo("0000" + "40005001" + "ff07f0ff" + "40006055" + "0000");
        assertThat(TidEntry.read(b, 2, 0)).isEqualTo(0x0150_0040);
        assertThat(TidEntry.read(b, 2, 1)).isEqualTo(0xFFF0_07FF);
        assertThat(TidEntry.read(b, 2, 2)).isEqualTo(0x5560_0040);
        assertThat(b.readerIndex()).isZero();
    }

    @Test
    void countOfAList() {
        assertThat(TidEntry.count(4)).isEqualTo(1);
        assertThat(TidEntry.count(256)).isEqualTo(64);
        assertThat(TidEntry.count(0)).isZero();
    }
}
