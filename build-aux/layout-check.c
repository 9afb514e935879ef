/* layout-check.c — checks the shape of the source tree (make check-layout).
 *
 * It warns ("file:line: warning: ...", counted in the summary; the exit status
 * is unaffected) of a C file over --max-file-lines (default 500) and of a
 * function body, its "{" line to its "}" line, over --max-function-lines (60).
 * It fails, printing one "file:line: message" line per problem, when
 *   - modules depend on each other in a cycle. A module is x.c and x.h of one
 *     folder. It depends on another by #include "y.h" (looked up next to the
 *     including file, then in each -I folder) or when one of its .c files uses
 *     a non-static function that the other defines;
 *   - with --layers FILE (layers from the lowest to the highest, one a line,
 *     '#' comments), a module of a lower layer depends on a higher one. A
 *     layer is a folder, or modules named by path without extension
 *     (host/opencode/js), several on a line making one layer. Files in no
 *     layer are checked for cycles only.
 * Why: short files and functions can be reviewed, and a tree without cycles
 * whose layers only look down can be read, tested and changed bottom up.
 * How: a small tokenizer (comments, string and character literals, and
 * preprocessor lines with their continuations are skipped), no preprocessing.
 * A "{" at file scope after a ")" (attributes or qualifiers may come between),
 * with no "=" before it and no struct/union/enum just before, opens a function.
 * --allow-long FILE:FUNC exempts a function, --allow-long FILE a file's length.
 * Exit 0 with a one-line summary, 1 on problems, 2 on usage or I/O errors.
 */
#include <ctype.h>
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* kind: i(dentifier), n(umber), s(tring or char), p(unctuator), #(the x in #include "x") */
/* clang-format off */
typedef struct { char kind; int len, line; const char *s; } token;
typedef struct { char *path, *real, *buf; token *tok; int ntok, lines, module, layer, is_c; } file;
typedef struct { char *name; int file; } def;    /* a non-static function */
typedef struct { char *real; int file; } module; /* real: path without extension; file: its .c if any */
typedef struct { char *name, *real; int level, is_module; } layer; /* real: folder, or module path */
/* Why a module depends on another: kind '#' or 's' (symbol) in file, what: the name. */
typedef struct { char kind; int file, def_file; const token *what; } evidence;
/* clang-format on */

static file *files;
static def *defs;
static module *mods;
static layer *layers;
static evidence *ev; /* nmod x nmod: the first reason module a depends on module b */
static char **incdirs, **allow;
static int nfiles, ndefs, nmod, nlayers, nincdirs, nallow, *allow_used;
static int max_file = 500, max_func = 60, problems, warnings, nfuncs, longest, longest_file;
static char *longest_name;

static void fatal(const char *path, const char *what) { fprintf(stderr, "layout-check: %s: %s\n", path, what), exit(2); }
static void report(int *count, const char *path, int line, const char *fmt, ...) { /* count: &problems or &warnings */
    va_list ap;
    va_start(ap, fmt);
    printf("%s:%d: %s", path, line, count == &warnings ? "warning: " : ""), vprintf(fmt, ap), putchar('\n');
    va_end(ap), ++*count;
}

static void *xrealloc(void *p, size_t size) {
    if (!(p = realloc(p, size ? size : 1))) fatal("layout-check", "out of memory");
    return p;
}
static void *zalloc(size_t n, size_t size) { return memset(xrealloc(NULL, n * size), 0, n * size); }
/* Room for element n of an array that doubles at each power of two. */
static void *grow(void *p, int n, size_t size) { return (n & (n - 1)) ? p : xrealloc(p, (size_t)(n ? 2 * n : 1) * size); }

static char *copy(const char *s, size_t n) {
    char *d = xrealloc(NULL, n + 1);
    d[n] = 0;
    return memcpy(d, s, n);
}

static int has_ext(const char *name, const char *ext) {
    size_t n = strlen(name), e = strlen(ext);
    return n > e && !strcmp(name + n - e, ext);
}

/* ---- the files ------------------------------------------------------------ */
static int file_by_real(const char *real) {
    for (int i = 0; i < nfiles; i++)
        if (!strcmp(files[i].real, real)) return i;
    return -1;
}

static void add_file(const char *path) {
    char *real = realpath(path, NULL);
    if (!real) fatal(path, "cannot resolve the path");
    if (file_by_real(real) >= 0) {
        free(real);
        return;
    }
    files = grow(files, nfiles, sizeof *files);
    files[nfiles++] = (file){ .path = copy(path, strlen(path)), .real = real, .is_c = has_ext(path, ".c") };
}

/* A file, or a folder's *.c and *.h files, recursively, in name order. */
static void add_path(const char *path) {
    struct stat st;
    struct dirent **ents;
    int n = stat(path, &st) ? -2 : S_ISDIR(st.st_mode) ? scandir(path, &ents, NULL, alphasort) : -3;
    if (n == -3) add_file(path);
    else if (n < 0) fatal(path, n == -2 ? "no such file or folder" : "cannot read the folder");
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, name);
        if (name[0] != '.' && stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) add_path(sub);
        else if (name[0] != '.' && (has_ext(name, ".c") || has_ext(name, ".h"))) add_file(sub);
        free(ents[i]);
    }
    if (n >= 0) free(ents);
}

static char *read_all(const char *path) {
    FILE *fp = fopen(path, "rb");
    long n = fp && !fseek(fp, 0, SEEK_END) ? ftell(fp) : -1;
    char *buf = n >= 0 ? xrealloc(NULL, (size_t)n + 1) : NULL;
    if (!buf || fseek(fp, 0, SEEK_SET) || fread(buf, 1, (size_t)n, fp) != (size_t)n) fatal(path, "cannot read");
    fclose(fp);
    buf[n] = 0;
    return buf;
}

/* ---- the tokenizer -------------------------------------------------------- */
static void push(file *f, char kind, const char *s, int len, int line) {
    f->tok = grow(f->tok, f->ntok, sizeof *f->tok);
    f->tok[f->ntok++] = (token){ kind, len, line, s };
}

/* Past the comment that starts at p. */
static const char *skip_comment(const char *p, int *line) {
    if (p[1] == '/') return p + strcspn(p, "\n");
    for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++) *line += *p == '\n';
    return *p ? p + 2 : p;
}

/* Past the string or character literal whose quote is at p. */
static const char *skip_quoted(const char *p, int *line) {
    char q = *p++;
    for (; *p && *p != q && *p != '\n'; p++)
        if (*p == '\\' && p[1]) *line += *++p == '\n';
    return *p == q ? p + 1 : p;
}

/* A preprocessor line, from its '#' to the newline that ends it. */
static const char *skip_directive(file *f, const char *p, int *line) {
    const char *q = p + 1 + strspn(p + 1, " \t"), *end;
    if (!strncmp(q, "include", 7)) {
        q += 7 + strspn(q + 7, " \t");
        end = *q == '"' ? q + 1 + strcspn(q + 1, "\"\n") : NULL;
        if (end && *end == '"') push(f, '#', q + 1, (int)(end - q - 1), *line);
    }
    while (*p && *p != '\n')
        if (p[0] == '\\' && p[1] == '\n') p += 2, (*line)++;
        else if (p[0] == '/' && (p[1] == '*' || p[1] == '/')) p = skip_comment(p, line);
        else p = *p == '"' ? skip_quoted(p, line) : p + 1;
    return p;
}

static int is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* One token at p: an identifier, a number, a literal or a punctuator. */
static const char *lex_token(file *f, const char *p, int *line) {
    const char *s = p;
    int at = *line;
    char kind = 'p';
    if (*p == '"' || *p == '\'') p = skip_quoted(p, line), kind = 's';
    else if (is_ident_char(*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        kind = isalpha((unsigned char)*p) || *p == '_' ? 'i' : 'n';
        while (is_ident_char(*p) || (kind == 'n' && *p == '.')) p++;
    } else p += p[0] == '-' && p[1] == '>' ? 2 : 1;
    push(f, kind, s, (int)(p - s), at);
    return p;
}

static void lex_file(file *f) {
    const char *p = f->buf;
    int line = 1, bol = 1;
    while (*p)
        if (*p == '\n') line++, bol = 1, p++;
        else if (p[0] == '\\' && p[1] == '\n') line++, p += 2;
        else if (isspace((unsigned char)*p)) p++;
        else if (p[0] == '/' && (p[1] == '*' || p[1] == '/')) p = skip_comment(p, &line);
        else if (*p == '#' && bol) p = skip_directive(f, p, &line);
        else bol = 0, p = lex_token(f, p, &line);
    f->lines = p > f->buf ? line - (p[-1] == '\n') : 0;
}

/* ---- functions ------------------------------------------------------------ */
static int is_punct(const token *t, char c) { return t->kind == 'p' && t->len == 1 && t->s[0] == c; }

/* Whether t is an identifier among words (each between spaces). */
static int is_one_of(const token *t, const char *words) {
    char buf[64];
    if (t->kind != 'i' || t->len > 60) return 0;
    snprintf(buf, sizeof buf, " %.*s ", t->len, t->s);
    return strstr(words, buf) != NULL;
}

static int is_attribute(const token *t) { return is_one_of(t, " __attribute__ __attribute __declspec __asm__ asm "); }

/* The '(' that matches the ')' at j, not before lo; -1 if none. */
static int match_back(const token *t, int j, int lo) {
    for (int depth = 0; j >= lo; j--)
        if (is_punct(&t[j], ')')) depth++;
        else if (is_punct(&t[j], '(') && --depth == 0) return j;
    return -1;
}

/* The token of the name of the function whose body opens at t[brace] and
 * whose declaration starts at t[lo]; -1 if the brace opens something else. */
static int function_name(const token *t, int lo, int brace) {
    for (int i = lo; i < brace; i++)
        if (is_punct(&t[i], '=')) return -1;
    for (int j = brace - 1; j >= lo; j--) {
        if (is_one_of(&t[j], " struct union enum ")) return -1;
        if (t[j].kind == 'i') continue; /* a qualifier, or a macro such as NORETURN */
        int open = is_punct(&t[j], ')') ? match_back(t, j, lo) : -1;
        if (open <= lo) return -1;
        if (!is_attribute(&t[open - 1])) return t[open - 1].kind == 'i' ? open - 1 : -1;
        j = open - 1; /* past __attribute__((...)) */
    }
    return -1;
}

/* --allow-long FILE:FUNC (func) or FILE (func NULL: the file's length);
 * FILE is the path, or its end after a '/'. */
static int allowed(const char *path, const char *func) {
    size_t len = strlen(path);
    for (int i = 0; i < nallow; i++) {
        const char *colon = strrchr(allow[i], ':');
        size_t n = colon ? (size_t)(colon - allow[i]) : strlen(allow[i]);
        if (colon ? !func || strcmp(colon + 1, func) : func != NULL) continue;
        if (len >= n && !strncmp(path + len - n, allow[i], n) && (len == n || path[len - n - 1] == '/')) return allow_used[i] = 1;
    }
    return 0;
}

static void function_found(int fi, int lo, int name, int lines) {
    const token *t = files[fi].tok;
    char *id = copy(t[name].s, (size_t)t[name].len);
    int is_static = 0;
    nfuncs++;
    if (lines > longest) longest = lines, longest_file = fi, longest_name = id;
    if (lines > max_func && !allowed(files[fi].path, id))
        report(&warnings, files[fi].path, t[name].line, "function %s is %d lines (limit %d)", id, lines, max_func);
    for (int i = lo; i < name; i++) is_static |= is_one_of(&t[i], " static ");
    if (!is_static) {
        defs = grow(defs, ndefs, sizeof *defs);
        defs[ndefs++] = (def){ id, fi };
    } else if (id != longest_name) free(id);
}

static void find_functions(int fi) {
    const token *t = files[fi].tok;
    int depth = 0, lo = 0, name = -1, open = 0;
    for (int i = 0; i < files[fi].ntok; i++)
        if (depth == 0 && is_punct(&t[i], ';')) lo = i + 1;
        else if (is_punct(&t[i], '{')) {
            if (depth++ == 0 && (name = function_name(t, lo, i)) >= 0) open = i;
        } else if (is_punct(&t[i], '}') && depth > 0 && --depth == 0 && name >= 0) {
            function_found(fi, lo, name, t[i].line - t[open].line + 1);
            lo = i + 1, name = -1;
        }
}

/* ---- modules and layers --------------------------------------------------- */
static void assign_modules(void) {
    for (int i = 0; i < nfiles; i++) {
        char *key = copy(files[i].real, strlen(files[i].real)), *dot = strrchr(strrchr(key, '/'), '.');
        size_t dir_len = (size_t)(strrchr(files[i].real, '/') - files[i].real);
        int m = 0;
        if (dot) *dot = 0;
        while (m < nmod && strcmp(mods[m].real, key)) m++;
        if (m == nmod) {
            mods = grow(mods, nmod, sizeof *mods);
            mods[nmod++] = (module){ key, i };
        } else free(key);
        mods[m].file = files[i].is_c ? i : mods[m].file;
        files[i].module = m;
        files[i].layer = -1;
        for (int l = 0; l < nlayers; l++)
            if (layers[l].is_module ? !strcmp(layers[l].real, mods[m].real)
                                    : strlen(layers[l].real) == dir_len && !strncmp(layers[l].real, files[i].real, dir_len))
                files[i].layer = l;
    }
}

static void load_layers(const char *rules) {
    char buf[4096], name[4096], src[4200], *real;
    FILE *fp = fopen(rules, "r");
    if (!fp) fatal(rules, "cannot open");
    for (int line = 1, level = 0, n, used; fgets(buf, sizeof buf, fp); line++, level += used) {
        used = 0; /* a folder, else a module: the real path of its .c (or .h) without the extension */
        for (char *at = buf; sscanf(at, " %4095[^# \t\r\n]%n", name, &n) == 1; at += n, used = 1) {
            int is_module = !(real = realpath(name, NULL));
            if (is_module && !(real = realpath((snprintf(src, sizeof src, "%s.c", name), src), NULL)))
                real = realpath((snprintf(src, sizeof src, "%s.h", name), src), NULL);
            if (!real) report(&problems, rules, line, "no such folder or module: %s", name);
            else
                layers = grow(layers, nlayers, sizeof *layers),
                layers[nlayers++] = (layer){ copy(name, strlen(name)), real, level, is_module };
            if (real && is_module) *strrchr(real, '.') = 0;
        }
    }
    fclose(fp);
}

/* ---- dependencies --------------------------------------------------------- */
static evidence *dep(int a, int b) { return &ev[(size_t)a * (size_t)nmod + (size_t)b]; }
static int cmp_def(const void *a, const void *b) { return strcmp(((const def *)a)->name, ((const def *)b)->name); }

static void note(int fi, int m, char kind, const token *what, int def_file) {
    evidence *e = dep(files[fi].module, m);
    if (m != files[fi].module && !e->kind) *e = (evidence){ kind, fi, def_file, what };
}

/* Each #include "name" of file fi: next to it, then in each -I folder. */
static void include_deps(int fi) {
    char *dir = copy(files[fi].real, (size_t)(strrchr(files[fi].real, '/') - files[fi].real)), path[PATH_MAX];
    for (const token *t = files[fi].tok; t < files[fi].tok + files[fi].ntok; t++) {
        char *real = NULL;
        for (int d = -1; t->kind == '#' && d < nincdirs && !real; d++) {
            snprintf(path, sizeof path, "%s/%.*s", d < 0 ? dir : incdirs[d], t->len, t->s);
            real = realpath(path, NULL);
        }
        int to = real ? file_by_real(real) : -1;
        if (to >= 0) note(fi, files[to].module, '#', t, to);
        free(real);
    }
    free(dir);
}

/* The first of the definitions (sorted by name) of identifier t; -1 if none. */
static int find_def(const token *t) {
    char name[256];
    def key = { name, 0 }, *d;
    if (t->kind != 'i' || t->len >= (int)sizeof name || !ndefs) return -1;
    memcpy(name, t->s, (size_t)t->len);
    name[t->len] = 0;
    if (!(d = bsearch(&key, defs, (size_t)ndefs, sizeof *defs, cmp_def))) return -1;
    while (d > defs && !strcmp(d[-1].name, name)) d--;
    return (int)(d - defs);
}

/* Whether identifier t[i] is a member (after . or ->) or a declarator such as (*name)(...). */
static int not_a_use(const token *t, int i) {
    return i > 0 && ((t[i - 1].kind == 'p' && (t[i - 1].s[0] == '.' || t[i - 1].len == 2)) ||
                     (i > 1 && is_punct(&t[i - 1], '*') && is_punct(&t[i - 2], '(')));
}

/* Uses in .c file fi of functions defined in another module (none when
 * one of the definitions of the name is in fi's own module). */
static void symbol_deps(int fi) {
    const token *t = files[fi].tok;
    for (int i = 0; i < files[fi].ntok; i++) {
        int d = find_def(&t[i]), end = d, local = 0;
        if (d < 0 || not_a_use(t, i)) continue;
        while (end < ndefs && !strcmp(defs[end].name, defs[d].name)) local |= files[defs[end++].file].module == files[fi].module;
        for (int k = d; k < end && !local; k++) note(fi, files[defs[k].file].module, 's', &t[i], defs[k].file);
    }
}

static void find_edges(void) {
    ev = zalloc((size_t)nmod * (size_t)nmod, sizeof *ev);
    if (ndefs) qsort(defs, (size_t)ndefs, sizeof *defs, cmp_def);
    for (int fi = 0; fi < nfiles; fi++) {
        include_deps(fi);
        if (files[fi].is_c) symbol_deps(fi);
    }
}

static const char *reason(const evidence *e) {
    static char buf[PATH_MAX + 512];
    if (e->kind == '#') snprintf(buf, sizeof buf, "via #include \"%.*s\"", e->what->len, e->what->s);
    else snprintf(buf, sizeof buf, "via symbol %.*s defined in %s", e->what->len, e->what->s, files[e->def_file].path);
    return buf;
}

static void check_layers(void) {
    for (int a = 0; a < nmod; a++)
        for (int b = 0, from = files[mods[a].file].layer, to; b < nmod && from >= 0; b++)
            if (dep(a, b)->kind && (to = files[mods[b].file].layer) >= 0 && layers[to].level > layers[from].level)
                report(&problems, files[dep(a, b)->file].path, dep(a, b)->what->line, "%s depends on %s (higher): %s",
                       layers[from].name, layers[to].name, reason(dep(a, b)));
}

/* ---- cycles --------------------------------------------------------------- */
/* The shortest path from module a to module b, into path (a first, b last):
 * its length in modules, 0 if there is none. */
static int shortest_path(int a, int b, int *path) {
    int *prev = xrealloc(NULL, (size_t)nmod * sizeof *prev), *queue = xrealloc(NULL, (size_t)nmod * sizeof *queue);
    int head = 0, tail = 0, n = 0;
    for (int i = 0; i < nmod; i++) prev[i] = -1;
    prev[a] = a, queue[tail++] = a;
    while (head < tail && prev[b] < 0)
        for (int v = queue[head++], w = 0; w < nmod; w++)
            if (dep(v, w)->kind && prev[w] < 0) prev[w] = v, queue[tail++] = w;
    for (int v = b; prev[b] >= 0 && v != a; v = prev[v]) n++;
    for (int v = b, i = prev[b] >= 0 ? n++ : -1; i >= 0; v = prev[v], i--) path[i] = v;
    free(prev);
    free(queue);
    return n;
}

static const char *module_name(int m) { return files[mods[m].file].path; }

/* "file:line: dependency cycle: a -> b -> a", then a line for each edge. */
static void report_cycle(const int *c, int n) {
    const evidence *e = dep(c[0], c[1]);
    printf("%s:%d: dependency cycle: ", files[e->file].path, e->what->line);
    for (int i = 0; i < n; i++) printf("%s -> ", module_name(c[i]));
    printf("%s\n", module_name(c[0]));
    for (int i = 0; i < n; i++) {
        e = dep(c[i], c[(i + 1) % n]);
        printf("%s:%d:   %s -> %s %s\n", files[e->file].path, e->what->line, module_name(c[i]), module_name(c[(i + 1) % n]),
               reason(e));
    }
    problems++;
}

/* For each edge a -> b, the shortest way back from b to a closes a cycle:
 * each such cycle is reported once, from its first module. */
static void check_cycles(void) {
    int *path = xrealloc(NULL, (size_t)(nmod + 1) * sizeof *path), *seen = NULL, nseen = 0, n, first, dup;
    for (int a = 0; a < nmod; a++)
        for (int b = 0; b < nmod; b++) {
            if (!dep(a, b)->kind || !(n = shortest_path(b, a, path + 1))) continue;
            path[0] = a; /* path: a, b, ..., a */
            for (int i = first = 0; i < n; i++) first = path[i] < path[first] ? i : first;
            seen = xrealloc(seen, (size_t)(nseen + n + 1) * sizeof *seen); /* seen: n, modules, n, ... */
            int *m = seen + nseen;
            for (int i = m[0] = n; i > 0; i--) m[i] = path[(first + i - 1) % n];
            for (int k = dup = 0; k < nseen && !dup; k += seen[k] + 1)
                dup = seen[k] == n && !memcmp(seen + k + 1, m + 1, (size_t)n * sizeof *m);
            if (!dup) report_cycle(m + 1, n), nseen += n + 1;
        }
    free(seen);
    free(path);
}

/* ---- main ----------------------------------------------------------------- */
static void usage(void) {
    fputs("usage: layout-check [--max-file-lines N] [--max-function-lines N] [--layers FILE]\n"
          "                    [-I DIR]... [--allow-long FILE[:FUNC]]... PATH...\n",
          stderr),
        exit(2);
}

static void parse_args(int argc, char **argv, const char **rules) {
    incdirs = xrealloc(NULL, (size_t)argc * sizeof *incdirs), allow = xrealloc(NULL, (size_t)argc * sizeof *allow);
    static const struct option opts[] = { { "max-file-lines", 1, NULL, 'F' },
                                          { "max-function-lines", 1, NULL, 'f' },
                                          { "layers", 1, NULL, 'l' },
                                          { "allow-long", 1, NULL, 'a' },
                                          { NULL, 0, NULL, 0 } };
    for (int c; (c = getopt_long(argc, argv, "I:", opts, NULL)) != -1;)
        if (c == 'I') incdirs[nincdirs++] = optarg;
        else if (c == 'F' || c == 'f') *(c == 'F' ? &max_file : &max_func) = atoi(optarg);
        else if (c == 'l') *rules = optarg;
        else if (c == 'a') allow[nallow++] = optarg;
        else usage();
    if (optind == argc || max_file < 1 || max_func < 1) usage();
    for (int i = optind; i < argc; i++) {
        for (size_t n = strlen(argv[i]); n > 1 && argv[i][n - 1] == '/'; n--) argv[i][n - 1] = 0;
        add_path(argv[i]);
    }
}

int main(int argc, char **argv) {
    const char *rules = NULL;
    parse_args(argc, argv, &rules);
    allow_used = zalloc((size_t)nallow, sizeof *allow_used);
    if (rules) load_layers(rules);
    for (int i = 0; i < nfiles; i++) {
        files[i].buf = read_all(files[i].path);
        lex_file(&files[i]);
        if (files[i].lines > max_file && !allowed(files[i].path, NULL))
            report(&warnings, files[i].path, max_file + 1, "file is %d lines (limit %d)", files[i].lines, max_file);
        find_functions(i);
    }
    assign_modules();
    find_edges();
    check_layers();
    check_cycles();
    for (int i = 0; i < nallow; i++)
        if (!allow_used[i]) fprintf(stderr, "layout-check: note: nothing matches --allow-long %s\n", allow[i]);
    char warned[48] = "";
    if (warnings) snprintf(warned, sizeof warned, ", %d warning%s (size)", warnings, warnings == 1 ? "" : "s");
    if (problems)
        return printf("layout-check: %d problem%s in %d files%s\n", problems, problems == 1 ? "" : "s", nfiles, warned), 1;
    printf("layout-check: %d files, %d functions, longest function %d lines (%s, %s), no cycles%s\n", nfiles, nfuncs, longest,
           longest_name ? longest_name : "none", longest_name ? files[longest_file].path : "-", warned);
    return 0;
}
