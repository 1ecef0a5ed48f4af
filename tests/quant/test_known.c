/*
 * test_known.c — known-answer tests: one hand-assembled block per format,
 * its bytes written out literally, dequantized and checked against values
 * computed by hand from ggml's format definitions (comments show the
 * arithmetic). Where the quantizer must reproduce the block exactly (the
 * ternary formats, Q8_0, Q4_0, Q8_K on exact inputs), that is checked too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quant/quant.h"

/* fp16 bit patterns used below */
#define H_0_5 0x3800   /* 0.5  */
#define H_1 0x3c00     /* 1.0  */
#define H_2 0x4000     /* 2.0  */

/* The bsums of a hand-made Q8_K block: each 16 consecutive qs summed. */
static void set_bsums(block_q8_K *a) {
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int j = 16 * g; j < 16 * g + 16; j++) s += a->qs[j];
        a->bsums[g] = (int16_t)s;
    }
}

/* ===================================================================== */
/* Q8_0 and Q4_0                                                          */
/* ===================================================================== */

static void test_q8_0_block(void **state) {
    (void)state;
    block_q8_0 b;
    b.d = H_0_5;
    for (int j = 0; j < 32; j++) b.qs[j] = (int8_t)(j * 8 - 127);   /* -127, -119, ..., 121 */
    float y[32];
    tb_dequantize_row_q8_0_ref(&b, y, 32);
    assert_true(y[0] == -63.5f);    /* -127 * 0.5 */
    assert_true(y[16] == 0.5f);     /* (128 - 127) * 0.5 */
    assert_true(y[31] == 60.5f);    /* 121 * 0.5 */
    for (int j = 0; j < 32; j++) assert_true(y[j] == (float)(j * 8 - 127) * 0.5f);
    /* the quantizer finds d = 63.5 / 127 = 0.5 and the same codes */
    block_q8_0 q;
    tb_quantize_row_q8_0_ref(y, &q, 32);
    assert_memory_equal(&q, &b, sizeof b);
}

static void test_q4_0_block(void **state) {
    (void)state;
    /* d = 2.0; byte j: low nibble = element j, high nibble = element j+16.
     * byte 0 = 0x9f: element 0 = (15-8)*2 = 14, element 16 = (9-8)*2 = 2
     * byte 1 = 0x08: element 1 = 0,             element 17 = (0-8)*2 = -16
     * others 0x88: all zero weights */
    block_q4_0 b;
    b.d = H_2;
    memset(b.qs, 0x88, sizeof b.qs);
    b.qs[0] = 0x9f;
    b.qs[1] = 0x08;
    float y[32];
    tb_dequantize_row_q4_0_ref(&b, y, 32);
    for (int j = 0; j < 32; j++) {
        float want = j == 0 ? 14.0f : j == 16 ? 2.0f : j == 17 ? -16.0f : 0.0f;
        assert_true(y[j] == want);
    }
    /* quantizer: largest magnitude is -16 -> d = -16 / -8 = 2, same codes */
    block_q4_0 q;
    tb_quantize_row_q4_0_ref(y, &q, 32);
    assert_memory_equal(&q, &b, sizeof b);

    /* dot with a hand-built Q8_0 activation: d_a = 0.5, a_0 = 3, a_16 = -2,
     * a_17 = 5, others 1: sum (q-8)*a = 7*3 + 1*(-2) + (-8)*5 = -21;
     * s = -21 * 2 * 0.5 = -21 */
    block_q8_0 a;
    a.d = H_0_5;
    memset(a.qs, 1, sizeof a.qs);
    a.qs[0] = 3; a.qs[16] = -2; a.qs[17] = 5;
    float s;
    tb_vec_dot_q4_0_q8_0_ref(32, &s, &b, &a);
    assert_true(s == -21.0f);
    /* Q8_0 . Q8_0 of a with itself: 31 ones... = 3^2 + 2^2 + 5^2 + 29 = 67 -> 67 * 0.25 */
    tb_vec_dot_q8_0_q8_0_ref(32, &s, &a, &a);
    assert_true(s == 16.75f);
}

/* ===================================================================== */
/* Q4_K                                                                   */
/* ===================================================================== */

/* Sub-block scales and mins (6-bit), packed by hand below. */
static const int k4_sc[8] = {1, 2, 3, 4, 17, 33, 49, 63};
static const int k4_m[8] = {5, 6, 7, 8, 18, 34, 50, 62};

static void test_q4_K_block(void **state) {
    (void)state;
    /* bytes 0..3: sc[0..3] | top 2 bits of sc[4..7] << 6
     *   17 = 0b01'0001 -> 1 | 0x40;  33 = 0b10'0001 -> 2 | 0x80;
     *   49 = 0b11'0001 -> 3 | 0xc0;  63 = 0b11'1111 -> 4 | 0xc0
     * bytes 4..7: m[0..3] | top 2 bits of m[4..7] << 6
     *   18 = 0b01'0010 -> 5 | 0x40;  34 = 0b10'0010 -> 6 | 0x80;
     *   50 = 0b11'0010 -> 7 | 0xc0;  62 = 0b11'1110 -> 8 | 0xc0
     * bytes 8..11: low 4 bits of sc[4+i] | low 4 bits of m[4+i] << 4
     *   (1, 2) -> 0x21; (1, 2) -> 0x21; (1, 2) -> 0x21; (15, 14) -> 0xef */
    static const uint8_t scales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x45, 0x86,
                                       0xc7, 0xc8, 0x21, 0x21, 0x21, 0xef};
    block_q4_K b;
    b.d = H_1;
    b.dmin = H_0_5;
    memcpy(b.scales, scales, 12);
    /* byte 32k + l: low nibble = element 64k + l (sub-block 2k),
     * high nibble = element 64k + 32 + l (sub-block 2k+1) */
    for (int k = 0; k < 4; k++)
        for (int l = 0; l < 32; l++) b.qs[32 * k + l] = (uint8_t)((l & 15) | ((15 - (l & 15)) << 4));
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        tb_q4_K_scale_min(j, b.scales, &sc, &m);
        assert_int_equal(sc, k4_sc[j]);
        assert_int_equal(m, k4_m[j]);
    }
    float y[256];
    tb_dequantize_row_q4_K_ref(&b, y, 256);
    for (int k = 0; k < 4; k++)
        for (int l = 0; l < 32; l++) {
            /* w = d * sc * q - dmin * m */
            float lo = 1.0f * k4_sc[2 * k] * (l & 15) - 0.5f * k4_m[2 * k];
            float hi = 1.0f * k4_sc[2 * k + 1] * (15 - (l & 15)) - 0.5f * k4_m[2 * k + 1];
            assert_true(y[64 * k + l] == lo);
            assert_true(y[64 * k + 32 + l] == hi);
        }
    /* spot checks by hand: element 255 = sub-block 7, q = 15 - 15 = 0 -> -31;
     * element 200 = sub-block 6, l = 8, q = 8 -> 49*8 - 25 = 367 */
    assert_true(y[255] == -31.0f);
    assert_true(y[200] == 367.0f);
}

/* ===================================================================== */
/* Q6_K                                                                   */
/* ===================================================================== */

static void test_q6_K_block(void **state) {
    (void)state;
    block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = H_1;
    for (int i = 0; i < 16; i++) b.scales[i] = (int8_t)(i - 7);
    /* ql[0] = 0x7a, ql[32] = 0x3f, qh[0] = 0b11'10'01'00:
     *   element 0  = low(ql[0])  | (qh[0] bits 0-1) << 4 = 10 | 0  = 10
     *   element 32 = low(ql[32]) | (bits 2-3) << 4       = 15 | 16 = 31
     *   element 64 = high(ql[0]) | (bits 4-5) << 4       = 7  | 32 = 39
     *   element 96 = high(ql[32])| (bits 6-7) << 4       = 3  | 48 = 51
     * second half: ql[64+5] = 0x0c, qh[32+5] = 0x02:
     *   element 133 = 12 | 2 << 4 = 44 */
    b.ql[0] = 0x7a;
    b.ql[32] = 0x3f;
    b.qh[0] = 0xe4;
    b.ql[69] = 0x0c;
    b.qh[37] = 0x02;
    float y[256];
    tb_dequantize_row_q6_K_ref(&b, y, 256);
    assert_true(y[0] == 154.0f);     /* scale[0] = -7:  -7 * (10 - 32) */
    assert_true(y[32] == 5.0f);      /* scale[2] = -5:  -5 * (31 - 32) */
    assert_true(y[64] == -21.0f);    /* scale[4] = -3:  -3 * (39 - 32) */
    assert_true(y[96] == -19.0f);    /* scale[6] = -1:  -1 * (51 - 32) */
    assert_true(y[133] == 12.0f);    /* scale[8] = 1:    1 * (44 - 32) */
    assert_true(y[200] == -160.0f);  /* scale[12] = 5, q = 0: 5 * -32 */
    assert_true(y[112] == 0.0f);     /* scale[7] = 0 */
    assert_true(y[1] == 224.0f);     /* -7 * -32 */
}

/* ===================================================================== */
/* Q8_K                                                                   */
/* ===================================================================== */

static void test_q8_K_block(void **state) {
    (void)state;
    /* x[0] = 127 is the largest magnitude (positive): iscale = -127/127 = -1,
     * so q = -x and d = -1; x[j] = j % 7 - 3 elsewhere. */
    float x[256];
    x[0] = 127.0f;
    for (int j = 1; j < 256; j++) x[j] = (float)(j % 7 - 3);
    block_q8_K b;
    tb_quantize_row_q8_K_ref(x, &b, 256);
    assert_true(b.d == -1.0f);
    assert_int_equal(b.qs[0], -127);
    for (int j = 1; j < 256; j++) assert_int_equal(b.qs[j], -(j % 7 - 3));
    for (int g = 0; g < 16; g++) {
        int want = 0;
        for (int j = 16 * g; j < 16 * g + 16; j++) want += j == 0 ? -127 : -(j % 7 - 3);
        assert_int_equal(b.bsums[g], want);
    }
    float y[256];
    tb_dequantize_row_q8_K_ref(&b, y, 256);
    for (int j = 0; j < 256; j++) assert_true(y[j] == x[j]);   /* 0 * -1 is -0: compare values */
    /* all-zero input: d = 0, everything zero */
    memset(x, 0, sizeof x);
    tb_quantize_row_q8_K_ref(x, &b, 256);
    assert_true(b.d == 0.0f);
    for (int j = 0; j < 256; j++) assert_int_equal(b.qs[j], 0);
    for (int g = 0; g < 16; g++) assert_int_equal(b.bsums[g], 0);
}

/* ===================================================================== */
/* TQ1_0: base-3 packing derived by hand                                  */
/* ===================================================================== */

/* A byte with trits t0..t4 (t0 most significant) stores
 * ceil(256 * (81 t0 + 27 t1 + 9 t2 + 3 t3 + t4) / 243):
 *   qs[0]  covers elements 0, 32, 64, 96, 128 (32n + 0)
 *          weights (-1, 0, +1, +1, -1) -> trits (0, 1, 2, 2, 0)
 *          v = 27 + 18 + 6 = 51 -> ceil(13056 / 243) = ceil(53.73) = 54
 *   qs[35] covers elements 163, 179, 195, 211, 227 (160 + 16n + 3)
 *          weights all +1 -> trits all 2: v = 242 -> ceil(61952 / 243) = 255
 *   qh[1]  covers elements 241, 245, 249, 253 (240 + 4n + 1), fifth trit 0
 *          weights (0, -1, +1, 0) -> trits (1, 0, 2, 1, 0)
 *          v = 81 + 18 + 3 = 102 -> ceil(26112 / 243) = ceil(107.46) = 108
 *   other qs bytes: all weights 0 -> trits 1: v = 121 -> ceil(127.47) = 128
 *   other qh bytes: trits (1,1,1,1,0): v = 120 -> ceil(30720 / 243) = 127  */
static void tq1_expected(float *w, float d) {
    for (int e = 0; e < 256; e++) w[e] = 0.0f;
    w[0] = -d; w[32] = 0; w[64] = d; w[96] = d; w[128] = -d;
    w[163] = w[179] = w[195] = w[211] = w[227] = d;
    w[241] = 0; w[245] = -d; w[249] = d; w[253] = 0;
}

static void test_tq1_0_block(void **state) {
    (void)state;
    block_tq1_0 b;
    memset(b.qs, 128, sizeof b.qs);
    memset(b.qh, 127, sizeof b.qh);
    b.qs[0] = 54;
    b.qs[35] = 255;
    b.qh[1] = 108;
    b.d = H_2;
    float y[256], want[256];
    tq1_expected(want, 2.0f);
    tb_dequantize_row_tq1_0_ref(&b, y, 256);
    for (int e = 0; e < 256; e++)
        if (y[e] != want[e]) fail_msg("element %d: %g, want %g", e, y[e], want[e]);
    /* the quantizer reproduces the block byte for byte (d = max|w| = 2) */
    block_tq1_0 q;
    tb_quantize_row_tq1_0_ref(want, &q, 256);
    assert_memory_equal(&q, &b, sizeof b);

    /* dot with Q8_K: a = 1 everywhere except a[0] = 10, a[64] = -4, a[163] = 7:
     * sum (t-1) a = -10 (0) - 4 (64) + 1 (96) - 1 (128) + 7 (163)
     *             + 4 (179, 195, 211, 227) - 1 (245) + 1 (249) = -3;
     * d_w = 2, d_a = 0.5 -> s = -3 */
    block_q8_K a;
    a.d = 0.5f;
    memset(a.qs, 1, sizeof a.qs);
    a.qs[0] = 10; a.qs[64] = -4; a.qs[163] = 7;
    set_bsums(&a);
    float s;
    tb_vec_dot_tq1_0_q8_K_ref(256, &s, &b, &a);
    assert_true(s == -3.0f);
}

/* ===================================================================== */
/* TQ2_0                                                                  */
/* ===================================================================== */

static void test_tq2_0_block(void **state) {
    (void)state;
    /* element 128h + 32k + m is bits 2k..2k+1 of qs[32h + m]; code 1 = 0.
     * qs[0] = 0b10'01'00'10: element 0 -> 2 (+d), 32 -> 0 (-d), 64 -> 1 (0), 96 -> 2 (+d)
     * qs[39] = 0b00'00'00'01: element 135 -> 1 (0), 167, 199, 231 -> 0 (-d)
     * other bytes 0x55: all codes 1 */
    block_tq2_0 b;
    memset(b.qs, 0x55, sizeof b.qs);
    b.qs[0] = 0x92;
    b.qs[39] = 0x01;
    b.d = H_0_5;
    float y[256];
    tb_dequantize_row_tq2_0_ref(&b, y, 256);
    for (int e = 0; e < 256; e++) {
        float want = (e == 0 || e == 96) ? 0.5f
                   : (e == 32 || e == 167 || e == 199 || e == 231) ? -0.5f : 0.0f;
        if (y[e] != want) fail_msg("element %d: %g, want %g", e, y[e], want);
    }
    block_tq2_0 q;
    tb_quantize_row_tq2_0_ref(y, &q, 256);
    assert_memory_equal(&q, &b, sizeof b);

    /* dot with a = e % 5 - 2 (d_a = 1):
     * +a[0] - a[32] + a[96] - a[167] - a[199] - a[231]
     * = -2 - 0 + (-1) - 0 - 2 - (-1) = -4 -> s = -4 * 0.5 */
    block_q8_K a;
    a.d = 1.0f;
    for (int e = 0; e < 256; e++) a.qs[e] = (int8_t)(e % 5 - 2);
    set_bsums(&a);
    float s;
    tb_vec_dot_tq2_0_q8_K_ref(256, &s, &b, &a);
    assert_true(s == -2.0f);
}

/* ===================================================================== */
/* Block sizes and field offsets (the byte layout of each struct)         */
/* ===================================================================== */

static void test_layouts(void **state) {
    (void)state;
    assert_int_equal(offsetof(block_q4_0, qs), 2);
    assert_int_equal(offsetof(block_q8_0, qs), 2);
    assert_int_equal(offsetof(block_q4_K, dmin), 2);
    assert_int_equal(offsetof(block_q4_K, scales), 4);
    assert_int_equal(offsetof(block_q4_K, qs), 16);
    assert_int_equal(offsetof(block_q6_K, qh), 128);
    assert_int_equal(offsetof(block_q6_K, scales), 192);
    assert_int_equal(offsetof(block_q6_K, d), 208);
    assert_int_equal(offsetof(block_q8_K, qs), 4);
    assert_int_equal(offsetof(block_q8_K, bsums), 260);
    assert_int_equal(offsetof(block_tq1_0, qh), 48);
    assert_int_equal(offsetof(block_tq1_0, d), 52);
    assert_int_equal(offsetof(block_tq2_0, d), 64);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q8_0_block),
        cmocka_unit_test(test_q4_0_block),
        cmocka_unit_test(test_q4_K_block),
        cmocka_unit_test(test_q6_K_block),
        cmocka_unit_test(test_q8_K_block),
        cmocka_unit_test(test_tq1_0_block),
        cmocka_unit_test(test_tq2_0_block),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
