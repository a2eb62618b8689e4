/* A caller of micro-ecc's two AVR multiplication entry points, with micro-ecc's own signatures
   (1-byte words, an int8_t word count last), for tests/test_uecc.py.  It reads records
   {num_words, left[num_words], right[num_words]} from uecc_inputs.h until num_words is 0 and
   prints, per record, "M <hex of left*right>" and "S <hex of left*left>" on UART0, most
   significant byte first, 32 bytes a line (continuation lines start with "+"). */
#include <stdint.h>
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/pgmspace.h>
#include <avr/sleep.h>

typedef uint8_t uECC_word_t;
typedef int8_t wordcount_t;

void uECC_vli_mult(uECC_word_t *result, const uECC_word_t *left, const uECC_word_t *right,
                   wordcount_t num_words);
void uECC_vli_square(uECC_word_t *result, const uECC_word_t *left, wordcount_t num_words);

#include "uecc_inputs.h" /* const uint8_t INPUTS[] PROGMEM */

static uECC_word_t left[127], right[127], product[254];

static void put(char c) {
    while (!(UCSR0A & _BV(UDRE0))) {
    }
    UDR0 = c;
}

static void print_hex(char tag, const uint8_t *x, int n) {
    static const char digits[] = "0123456789abcdef";
    put(tag);
    put(' ');
    for (int i = n - 1, k = 0; i >= 0; i--, k++) {
        if (k && k % 32 == 0) {
            put('\n');
            put('+');
        }
        put(digits[x[i] >> 4]);
        put(digits[x[i] & 15]);
    }
    put('\n');
}

int main(void) {
    UCSR0B = _BV(TXEN0);
    const uint8_t *p = INPUTS;
    for (;;) {
        wordcount_t n = (wordcount_t)pgm_read_byte(p++);
        if (n == 0)
            break;
        for (int i = 0; i < n; i++)
            left[i] = pgm_read_byte(p++);
        for (int i = 0; i < n; i++)
            right[i] = pgm_read_byte(p++);
        uECC_vli_mult(product, left, right, n);
        print_hex('M', product, 2 * n);
        uECC_vli_square(product, left, n);
        print_hex('S', product, 2 * n);
    }
    put('E');
    put('\n');
    cli();
    sleep_cpu();
    for (;;) {
    }
}
