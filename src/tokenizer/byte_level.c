#include "tokenizer/byte_level.h"

#include <pthread.h>
#include <string.h>

static char chars[256][3];
static int16_t cp_to_byte[324]; /* code points used are < 0x144 */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    int n = 0;
    for (int i = 0; i < 324; i++)
        cp_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        int cp = keep ? b : 256 + n++;
        cp_to_byte[cp] = (int16_t)b;
        if (cp < 0x80) {
            chars[b][0] = (char)cp;
        } else {
            chars[b][0] = (char)(0xC0 | (cp >> 6));
            chars[b][1] = (char)(0x80 | (cp & 0x3F));
        }
    }
}

const char *byte_level_char(uint8_t b)
{
    pthread_once(&once, build);
    return chars[b];
}

size_t byte_level_encode(char *dst, const char *src, size_t len)
{
    pthread_once(&once, build);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const char *c = chars[(uint8_t)src[i]];
        dst[o++] = c[0];
        if (c[1])
            dst[o++] = c[1];
    }
    return o;
}

int byte_level_byte(uint32_t cp)
{
    pthread_once(&once, build);
    return cp < 324 ? cp_to_byte[cp] : -1;
}
