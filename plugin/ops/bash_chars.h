/*
 * bash_chars.h — the wide-character classes tree-sitter-bash's scanner uses,
 * as OpenCode's copy of it sees them. Its scanner calls iswspace, iswalpha,
 * iswdigit and iswalnum; OpenCode runs it compiled to WebAssembly against
 * musl, whose classes are Unicode's whatever the locale, while glibc's in the
 * "C" locale stop at ASCII (a line with "ü" would parse differently). The
 * Makefile force-includes this header into the scanner (and nothing else),
 * so its calls come here. Pure; any thread.
 */
#ifndef OCBG_BASH_CHARS_H
#define OCBG_BASH_CHARS_H

#include <wctype.h>

int bash_iswspace(wint_t c);
int bash_iswalpha(wint_t c);
int bash_iswdigit(wint_t c);
int bash_iswalnum(wint_t c);

#ifdef OCBG_IN_TS_SCANNER
#define iswspace bash_iswspace
#define iswalpha bash_iswalpha
#define iswdigit bash_iswdigit
#define iswalnum bash_iswalnum
#endif

#endif
