/* bash_chars.c — see bash_chars.h. */
#include "ops/bash_chars.h"

#include <locale.h>
#include <pthread.h>
#include <stddef.h>

/* musl's white space: Unicode's White_Space less the non-breaking spaces
 * (U+00A0, U+2007, U+202F) and U+1680, U+180E. */
int bash_iswspace(wint_t c)
{
    static const wint_t spaces[] = {' ',    '\t',   '\n',   '\r',   11,     12,     0x0085,
                                    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                    0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x205f, 0x3000};
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        if (c == spaces[i])
            return 1;
    return 0;
}

int bash_iswdigit(wint_t c)
{
    return c >= '0' && c <= '9';
}

static locale_t unicode_locale;
static pthread_once_t unicode_once = PTHREAD_ONCE_INIT;

/* Made once, kept for the process's life (a locale_t is never written after
 * newlocale, so any thread may read it). */
static void make_unicode_locale(void)
{
    unicode_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Letters beyond ASCII by Unicode (glibc's C.UTF-8 tables); without that
 * locale, every non-space character beyond ASCII counts as a letter. */
int bash_iswalpha(wint_t c)
{
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    pthread_once(&unicode_once, make_unicode_locale);
    return unicode_locale ? iswalpha_l(c, unicode_locale) != 0 : !bash_iswspace(c);
}

int bash_iswalnum(wint_t c)
{
    return bash_iswdigit(c) || bash_iswalpha(c);
}
