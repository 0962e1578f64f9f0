/* A product x * k by a per-link constant k without multiplying (a Tofino stage cannot):
 * x keeps its MANT_BITS leading bits, x' = m << e, and a table the controller writes for k
 * holds m * k for every m; the product is (m * k) << e (refmodel/arith.py: mantissa, mul).
 * x' <= x and x - x' < 2^e <= x / 64: the product is never above x * k and at most 1/64
 * below it, exact for x < 128.
 * Mantissa finds e from x's leading one with a ternary table of constant entries (on a
 * Tofino a TCAM lookup, as here). The shift by e is one variable shift in v1model; a
 * Tofino would select one of its 25 constant-shift actions from the same table. */
#ifndef _MANTISSA_P4_
#define _MANTISSA_P4_

// |d|, saturated to 32 bits (the sign is the caller's to apply)
bit<32> magnitude32(in int<64> d) {
    bit<64> a = (bit<64>)(d < 0 ? -d : d);
    return a > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)a;
}

control Mantissa(in bit<32> x, out bit<8> e, out bit<7> m) {
    action leading(bit<8> shift) { e = shift; }
    // x's leading one at bit p >= MANT_BITS: e = p - (MANT_BITS - 1); below that x is its own mantissa.
    table leading_one {
        key = { x : ternary; }
        actions = { leading; }
        const default_action = leading(0);
        const entries = {
            32w0x80000000 &&& 32w0x80000000 : leading(25);
            32w0x40000000 &&& 32w0xC0000000 : leading(24);
            32w0x20000000 &&& 32w0xE0000000 : leading(23);
            32w0x10000000 &&& 32w0xF0000000 : leading(22);
            32w0x08000000 &&& 32w0xF8000000 : leading(21);
            32w0x04000000 &&& 32w0xFC000000 : leading(20);
            32w0x02000000 &&& 32w0xFE000000 : leading(19);
            32w0x01000000 &&& 32w0xFF000000 : leading(18);
            32w0x00800000 &&& 32w0xFF800000 : leading(17);
            32w0x00400000 &&& 32w0xFFC00000 : leading(16);
            32w0x00200000 &&& 32w0xFFE00000 : leading(15);
            32w0x00100000 &&& 32w0xFFF00000 : leading(14);
            32w0x00080000 &&& 32w0xFFF80000 : leading(13);
            32w0x00040000 &&& 32w0xFFFC0000 : leading(12);
            32w0x00020000 &&& 32w0xFFFE0000 : leading(11);
            32w0x00010000 &&& 32w0xFFFF0000 : leading(10);
            32w0x00008000 &&& 32w0xFFFF8000 : leading(9);
            32w0x00004000 &&& 32w0xFFFFC000 : leading(8);
            32w0x00002000 &&& 32w0xFFFFE000 : leading(7);
            32w0x00001000 &&& 32w0xFFFFF000 : leading(6);
            32w0x00000800 &&& 32w0xFFFFF800 : leading(5);
            32w0x00000400 &&& 32w0xFFFFFC00 : leading(4);
            32w0x00000200 &&& 32w0xFFFFFE00 : leading(3);
            32w0x00000100 &&& 32w0xFFFFFF00 : leading(2);
            32w0x00000080 &&& 32w0xFFFFFF80 : leading(1);
        }
    }
    apply {
        e = 0;
        leading_one.apply();
        m = (bit<7>)(x >> e);
    }
}

/* x * k for the constant k of a rate class (IWA's conversions between queue time and bytes depend on
 * the link rate): the class's table of m * k rows, written by the controller with the class's
 * transmit-time tables (controller/rates.py), so a rate change switches them at once. */
control RateProduct(in bit<8> rate_class, in bit<32> x, out bit<64> y) {
    Mantissa() mantissa;
    bit<7> m = 0;
    bit<64> mk = 0;
    action set_product(bit<48> product) { mk = (bit<64>)product; }
    table products {
        key = { rate_class : exact; m : exact; }
        actions = { set_product; }
        default_action = set_product(0);
        size = RATE_CLASSES * MANT_ENTRIES;
    }
    apply {
        bit<8> e;
        mantissa.apply(x, e, m);
        products.apply();
        y = mk << e;
    }
}

#endif
