/* ECDH with micro-ecc on every curve it has, timed by Timer1 (clk/1024, so figures are multiples
   of 1024 cycles) and printed on UART0; build and run as in docs/micro-ecc.md.  Party A's shared
   secret is timed; party B's is computed after it, and "ok" means both succeeded and agree.  The
   random numbers come from a fixed linear congruential generator: the runs are repeatable, not
   secure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <avr/io.h>
#include "uECC.h"

static uint32_t state = 12345;

static int fixed_rng(uint8_t *dest, unsigned size) {
    while (size--) {
        state = state * 1103515245u + 12345u;
        *dest++ = state >> 16;
    }
    return 1;
}

static void put(char c) {
    while (!(UCSR0A & _BV(UDRE0))) {
    }
    UDR0 = c;
}

int main(void) {
    static const char *names[] = {"secp160r1", "secp192r1", "secp224r1", "secp256r1", "secp256k1"};
    uECC_Curve curves[] = {uECC_secp160r1(), uECC_secp192r1(), uECC_secp224r1(),
                           uECC_secp256r1(), uECC_secp256k1()};
    char line[48];
    UCSR0B = _BV(TXEN0);
    uECC_set_rng(fixed_rng);
    for (int c = 0; c < 5; c++) {
        uint8_t public_a[64], private_a[32], public_b[64], private_b[32];
        uint8_t secret_a[32], secret_b[32];
        uECC_make_key(public_a, private_a, curves[c]);
        uECC_make_key(public_b, private_b, curves[c]);
        TCCR1B = 0;
        TCNT1 = 0;
        TCCR1B = _BV(CS12) | _BV(CS10);
        int ok = uECC_shared_secret(public_b, private_a, secret_a, curves[c]);
        uint16_t ticks = TCNT1;
        TCCR1B = 0;
        ok = ok && uECC_shared_secret(public_a, private_b, secret_b, curves[c])
             && memcmp(secret_a, secret_b, uECC_curve_public_key_size(curves[c]) / 2) == 0;
        snprintf(line, sizeof line, "%s %s %lu cycles\n", names[c], ok ? "ok" : "FAILED",
                 1024UL * ticks);
        for (char *p = line; *p; p++)
            put(*p);
    }
    __asm__ volatile("cli\n\tsleep"); /* simavr stops here */
    for (;;) {
    }
}
