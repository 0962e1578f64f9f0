/* Products and quotients of two run-time values as sums of logarithms (a Tofino stage cannot multiply
 * two run-time values; refmodel/arith.py: log2_q, exp2_q, and docs/arithmetic.md for the bounds).
 *   Log2: x's leading one (Mantissa's ternary table) gives e; x's LOG_MANT_BITS leading bits index a
 *         table of their log2 in Q12 (LOG_FRAC). Within 0.0016 of log2(x); Log2(0) = LOG_ZERO.
 *   Exp2: the Q12 fraction's EXP_KEY_BITS leading bits index a table of 2^f in Q20 (EXP_FRAC), shifted
 *         by the integer part. Never above 2^(l/4096), at most 0.05 % below; saturates at 2^32 - 1.
 * Both tables are constants of the program (p4src/include/rows/, written by tools/gen_logexp_rows.py),
 * the same for every link. Each use is an instance of its own: a table is applied once per packet. */
#ifndef _LOGEXP_P4_
#define _LOGEXP_P4_

#include "mantissa.p4"

control Log2(in bit<32> x, out int<32> l) {
    Mantissa() lead;
    bit<10> m = 0;
    bit<16> row = 0;
    action set_log(bit<16> v) { row = v; }
    table log2_rows {
        key = { m : exact; }
        actions = { set_log; }
        const default_action = set_log(0);
        const entries = {
#include "rows/log2_rows.p4"
        }
    }
    apply {
        l = LOG_ZERO;
        if (x != 0) {
            bit<8> e7;
            bit<7> m7;
            lead.apply(x, e7, m7);   // e7 keeps MANT_BITS (7) bits; this keeps LOG_MANT_BITS (10)
            bit<8> e = 0;
            if (e7 > LOG_MANT_BITS - MANT_BITS) { e = e7 - (LOG_MANT_BITS - MANT_BITS); }
            m = (bit<10>)(x >> e);
            log2_rows.apply();
            l = (int<32>)(((bit<32>)e << LOG_FRAC) + (bit<32>)row);
        }
    }
}

control Exp2(in int<32> l, out bit<32> y) {
    bit<10> k = 0;
    bit<32> row = 0;
    action set_exp(bit<32> v) { row = v; }
    table exp2_rows {
        key = { k : exact; }
        actions = { set_exp; }
        const default_action = set_exp(0);
        const entries = {
#include "rows/exp2_rows.p4"
        }
    }
    apply {
        y = 0xFFFFFFFF;
        if (l < LOG_ONE_BITS) {
            k = (bit<10>)((bit<32>)l >> (LOG_FRAC - EXP_KEY_BITS));   // the fraction's leading bits
            exp2_rows.apply();
            int<32> shift = (l >> LOG_FRAC) - EXP_FRAC;                // floor(l / 2^12) - EXP_FRAC
            if (shift >= 0) {
                y = row << (bit<8>)(bit<32>)shift;
            } else if (shift > -32) {
                y = row >> (bit<8>)(bit<32>)(-shift);
            } else {
                y = 0;
            }
        }
    }
}

#endif
