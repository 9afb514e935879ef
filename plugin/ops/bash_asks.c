/* bash_asks.c — see bash_asks.h. Linear in the line: each node of the tree
 * is visited once, a command's words are offsets into the line (never
 * copied), and an answer's entries are kept unique with a hash set; what
 * the answer copies (the commands' texts) is capped (BASH_ASKS_MAX_TEXT). */
#include "ops/bash_asks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tree_sitter/api.h>

#include "base/util.h"
#include "ops/bash_paths.h"
#include "ops/bash_set.h"

/* The grammar (tree-sitter-bash's parser.c, built into the plugin). */
const TSLanguage *tree_sitter_bash(void);

/* Programs whose next words name what they do, and how many words the
 * "always" prefix keeps: OpenCode 1.18.33's arity table, verbatim (so that
 * "always" approves exactly what OpenCode's would). Unlisted: one word. */
static const struct arity {
    const char *prefix;
    unsigned char words;
} arities[] = {
    // clang-format off
    {"cat", 1}, {"cd", 1}, {"chmod", 1}, {"chown", 1}, {"cp", 1}, {"echo", 1}, {"env", 1}, {"export", 1},
    {"grep", 1}, {"kill", 1}, {"killall", 1}, {"ln", 1}, {"ls", 1}, {"mkdir", 1}, {"mv", 1}, {"ps", 1},
    {"pwd", 1}, {"rm", 1}, {"rmdir", 1}, {"sleep", 1}, {"source", 1}, {"tail", 1}, {"touch", 1}, {"unset", 1},
    {"which", 1}, {"aws", 3}, {"az", 3}, {"bazel", 2}, {"brew", 2}, {"bun", 2}, {"bun run", 3}, {"bun x", 3},
    {"cargo", 2}, {"cargo add", 3}, {"cargo run", 3}, {"cdk", 2}, {"cf", 2}, {"cmake", 2}, {"composer", 2},
    {"consul", 2}, {"consul kv", 3}, {"crictl", 2}, {"deno", 2}, {"deno task", 3}, {"doctl", 3}, {"docker", 2},
    {"docker builder", 3}, {"docker compose", 3}, {"docker container", 3}, {"docker image", 3},
    {"docker network", 3}, {"docker volume", 3}, {"eksctl", 2}, {"eksctl create", 3}, {"firebase", 2},
    {"flyctl", 2}, {"gcloud", 3}, {"gh", 3}, {"git", 2}, {"git config", 3}, {"git remote", 3},
    {"git stash", 3}, {"go", 2}, {"gradle", 2}, {"helm", 2}, {"heroku", 2}, {"hugo", 2}, {"ip", 2},
    {"ip addr", 3}, {"ip link", 3}, {"ip netns", 3}, {"ip route", 3}, {"kind", 2}, {"kind create", 3},
    {"kubectl", 2}, {"kubectl kustomize", 3}, {"kubectl rollout", 3}, {"kustomize", 2}, {"make", 2},
    {"mc", 2}, {"mc admin", 3}, {"minikube", 2}, {"mongosh", 2}, {"mysql", 2}, {"mvn", 2}, {"ng", 2},
    {"npm", 2}, {"npm exec", 3}, {"npm init", 3}, {"npm run", 3}, {"npm view", 3}, {"nvm", 2}, {"nx", 2},
    {"openssl", 2}, {"openssl req", 3}, {"openssl x509", 3}, {"pip", 2}, {"pipenv", 2}, {"pnpm", 2},
    {"pnpm dlx", 3}, {"pnpm exec", 3}, {"pnpm run", 3}, {"poetry", 2}, {"podman", 2}, {"podman container", 3},
    {"podman image", 3}, {"psql", 2}, {"pulumi", 2}, {"pulumi stack", 3}, {"pyenv", 2}, {"python", 2},
    {"rake", 2}, {"rbenv", 2}, {"redis-cli", 2}, {"rustup", 2}, {"serverless", 2}, {"sfdx", 3},
    {"skaffold", 2}, {"sls", 2}, {"sst", 2}, {"swift", 2}, {"systemctl", 2}, {"terraform", 2},
    {"terraform workspace", 3}, {"tmux", 2}, {"turbo", 2}, {"ufw", 2}, {"vault", 2}, {"vault auth", 3},
    {"vault kv", 3}, {"vercel", 2}, {"volta", 2}, {"wp", 2}, {"yarn", 2}, {"yarn dlx", 3}, {"yarn run", 3},
    // clang-format on
};

/* Commands that only change directory: no "bash" pattern. */
static const char *const dir_changers[] = {"cd", "chdir", "popd", "pushd", "push-location", "set-location", NULL};
/* Commands whose arguments are checked as paths (OpenCode's list, PowerShell's verbs included). */
static const char *const path_takers[] = {"cd",           "chdir",       "popd",      "pushd",     "push-location",
                                          "set-location", "rm",          "cp",        "mv",        "mkdir",
                                          "touch",        "chmod",       "chown",     "cat",       "get-content",
                                          "set-content",  "add-content", "copy-item", "move-item", "remove-item",
                                          "new-item",     "rename-item", NULL};

/* ---- spans of the line ------------------------------------------------ */

typedef struct span {
    uint32_t a, b; /* the line's bytes [a, b) */
} span;

static size_t span_len(span s)
{
    return s.b - s.a;
}

static bool span_is(const char *src, span s, const char *str)
{
    size_t n = strlen(str);
    return span_len(s) == n && memcmp(src + s.a, str, n) == 0;
}

static bool span_in(const char *src, span s, const char *const *list)
{
    for (; *list; list++)
        if (span_is(src, s, *list))
            return true;
    return false;
}

cJSON *bash_dir_patterns(const cJSON *dirs)
{
    cJSON *out = cJSON_CreateArray();
    bash_set seen;
    bash_set_init(&seen);
    const cJSON *d;
    cJSON_ArrayForEach (d, dirs) {
        char *p = xasprintf("%s/*", strcmp(d->valuestring, "/") == 0 ? "" : d->valuestring);
        bash_set_append(out, &seen, p, strlen(p));
        free(p);
    }
    bash_set_free(&seen);
    return out;
}

/* ---- the tree ------------------------------------------------------------- */

/* The command line as UTF-16, the encoding OpenCode's parser reads (its
 * error recovery weighs skipped text by bytes, so the encoding can change
 * which tree a broken line gets), and where each unit starts in the UTF-8. */
typedef struct utf16 {
    uint16_t *units;
    uint32_t *at; /* at[i]: UTF-8 offset of unit i; at[n]: the length */
    uint32_t n;
} utf16;

/* One code point of s[0..len) (len > 0): its value, its length in *used.
 * An invalid or truncated sequence is U+FFFD for its first byte. */
static uint32_t utf8_decode(const unsigned char *s, size_t len, size_t *used)
{
    unsigned need = s[0] < 0x80             ? 0
                    : (s[0] & 0xE0) == 0xC0 ? 1
                    : (s[0] & 0xF0) == 0xE0 ? 2
                    : (s[0] & 0xF8) == 0xF0 ? 3
                                            : 9;
    *used = 1;
    if (need == 0)
        return s[0];
    if (need > 3 || need >= len || !utf8_valid((const char *)s, need + 1))
        return 0xFFFD;
    uint32_t cp = s[0] & (0x3F >> need);
    for (unsigned i = 1; i <= need; i++)
        cp = cp << 6 | (s[i] & 0x3F);
    *used = need + 1;
    return cp;
}

static void utf16_of(const char *src, size_t len, utf16 *u)
{
    u->units = xmalloc(sizeof *u->units * (len + 1));
    u->at = xmalloc(sizeof *u->at * (len + 1));
    u->n = 0;
    for (size_t i = 0, used; i < len; i += used) {
        uint32_t cp = utf8_decode((const unsigned char *)src + i, len - i, &used);
        u->at[u->n] = (uint32_t)i;
        if (cp < 0x10000) {
            u->units[u->n++] = (uint16_t)cp;
        } else {
            u->units[u->n++] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
            u->at[u->n] = (uint32_t)i;
            u->units[u->n++] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        }
    }
    u->at[u->n] = (uint32_t)len;
}

typedef struct walk {
    const char *src;
    const utf16 *u16;
    const char *project; /* normalized, or NULL */
    bash_asks *out;
    bash_set patterns, always, dirs; /* the strings of out's arrays */
    bash_set args;                   /* path arguments looked at: spans of src */
    span *words;                     /* the current command's */
    size_t words_cap;
    TSTreeCursor kids; /* walks the current command's children */
    size_t text;       /* bytes of the commands' texts so far */
} walk;

/* A node's bytes in the line (from its UTF-16 offsets). */
static span span_of(const walk *w, TSNode n)
{
    uint32_t a = w->u16->at[ts_node_start_byte(n) / 2], b = w->u16->at[ts_node_end_byte(n) / 2];
    return (span){a, b > a ? b : a};
}

/* Bytes of JavaScript's String.prototype.trim whitespace at s (0: none). */
static size_t js_space(const unsigned char *s, const unsigned char *end)
{
    if (s < end && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
        return 1;
    if (end - s >= 2 && s[0] == 0xC2 && s[1] == 0xA0)
        return 2;
    if (end - s < 3)
        return 0;
    unsigned c = (unsigned)s[0] << 16 | (unsigned)s[1] << 8 | s[2];
    bool sp = c == 0xE19A80 || (c >= 0xE28080 && c <= 0xE2808A) || c == 0xE280A8 || c == 0xE280A9 || c == 0xE280AF ||
              c == 0xE2819F || c == 0xE38080 || c == 0xEFBBBF;
    return sp ? 3 : 0;
}

static span js_trim(const char *src, span s)
{
    const unsigned char *base = (const unsigned char *)src, *a = base + s.a, *b = base + s.b;
    for (size_t k; (k = js_space(a, b)) != 0;)
        a += k;
    while (b > a) {
        size_t k = 0;
        for (size_t back = 1; back <= 3 && back <= (size_t)(b - a) && !k; back++)
            k = js_space(b - back, b) == back ? back : 0;
        if (!k)
            break;
        b -= k;
    }
    return (span){(uint32_t)(a - base), (uint32_t)(b - base)};
}

static bool is_word_type(const char *t)
{
    return strcmp(t, "command_name") == 0 || strcmp(t, "command_name_expr") == 0 || strcmp(t, "word") == 0 ||
           strcmp(t, "string") == 0 || strcmp(t, "raw_string") == 0 || strcmp(t, "concatenation") == 0;
}

/* OpenCode's prefix(): the entry for the most leading words that, joined
 * by spaces, the table lists (the first such entry); NULL when none. Each
 * entry is matched against the words in turn, so a long command costs
 * no more than a short one. */
static const struct arity *arity_of(const char *src, const span *words, int n)
{
    const struct arity *best = NULL;
    int best_words = 0;
    for (size_t i = 0; i < sizeof arities / sizeof arities[0]; i++) {
        const char *p = arities[i].prefix;
        for (int e = 0; e < n; e++) {
            size_t len = span_len(words[e]);
            if (strncmp(p, src + words[e].a, len) != 0) /* a word holds no NUL */
                break;
            p += len;
            if (*p == '\0') {
                if (e + 1 > best_words) {
                    best = &arities[i];
                    best_words = e + 1;
                }
                break;
            }
            if (*p++ != ' ')
                break;
        }
    }
    return best;
}

/* What a JavaScript object literal inherits: OpenCode looks its table up
 * as arity[words], so a command named so finds a function (or, for
 * __proto__, an object) there, which slice() reads as 0: no word is kept
 * and the "always" pattern is " *". */
static const char *const js_inherited[] = {"constructor",
                                           "__defineGetter__",
                                           "__defineSetter__",
                                           "hasOwnProperty",
                                           "__lookupGetter__",
                                           "__lookupSetter__",
                                           "isPrototypeOf",
                                           "propertyIsEnumerable",
                                           "toString",
                                           "valueOf",
                                           "__proto__",
                                           "toLocaleString",
                                           NULL};

/* The "always" pattern: the words the arity table keeps, joined, + " *". */
static void add_always(walk *w, const span *words, int n)
{
    const struct arity *a = arity_of(w->src, words, n);
    int keep = a ? a->words : span_in(w->src, words[0], js_inherited) ? 0 : 1;
    strbuf sb = {0};
    for (int i = 0; i < keep && i < n; i++) {
        if (i)
            sb_putn(&sb, " ", 1);
        sb_putn(&sb, w->src + words[i].a, span_len(words[i]));
    }
    sb_puts(&sb, " *");
    bash_set_append(w->out->always, &w->always, sb.buf, sb.len);
    sb_free(&sb);
}

/* A path-taking command's arguments: each outside the project asks for its
 * directory. An argument seen before (in any command) is skipped: it names
 * the same directory, already asked for. */
static void add_paths(walk *w, const span *words, int n)
{
    bool chmod = span_is(w->src, words[0], "chmod");
    for (int i = 1; i < n; i++) {
        const char *arg = w->src + words[i].a;
        size_t len = span_len(words[i]);
        if (len > 0 && (arg[0] == '-' || (chmod && arg[0] == '+')))
            continue;
        if (!bash_set_add(&w->args, arg, len))
            continue;
        char *dir = bash_path_outside(arg, len, w->project);
        if (dir)
            bash_set_append(w->out->dirs, &w->dirs, dir, strlen(dir));
        free(dir);
    }
}

/* The command's words (into w->words): its children of the word types. */
static int command_words(walk *w, TSNode cmd)
{
    int n = 0;
    ts_tree_cursor_reset(&w->kids, cmd);
    for (bool more = ts_tree_cursor_goto_first_child(&w->kids); more;
         more = ts_tree_cursor_goto_next_sibling(&w->kids)) {
        TSNode c = ts_tree_cursor_current_node(&w->kids);
        if (!is_word_type(ts_node_type(c)))
            continue;
        if ((size_t)n == w->words_cap) {
            w->words_cap = w->words_cap ? w->words_cap * 2 : 64;
            w->words = xrealloc(w->words, w->words_cap * sizeof *w->words);
        }
        w->words[n++] = span_of(w, c);
    }
    return n;
}

/* One `command` node (parent: the node it hangs from, maybe null): its path
 * arguments, its patterns. -EOVERFLOW when the texts pass the cap. */
static int add_command(walk *w, TSNode cmd, TSNode parent)
{
    int n = command_words(w, cmd);
    if (n == 0)
        return 0;
    bool redirected = !ts_node_is_null(parent) && strcmp(ts_node_type(parent), "redirected_statement") == 0;
    span text = span_of(w, redirected ? parent : cmd);
    w->text += span_len(text);
    if (w->text > BASH_ASKS_MAX_TEXT)
        return -EOVERFLOW;
    const span *words = w->words;
    bool named = span_len(words[0]) > 0;
    if (named && w->project && span_in(w->src, words[0], path_takers))
        add_paths(w, words, n);
    if (!named || !span_in(w->src, words[0], dir_changers)) {
        span pattern = js_trim(w->src, text);
        bash_set_append(w->out->patterns, &w->patterns, w->src + pattern.a, span_len(pattern));
        add_always(w, words, n);
    }
    return 0;
}

/* Every node of the tree in document order (pre-order): each `command`.
 * As web-tree-sitter's descendantsOfType walks: a node that ends at the very
 * start (an empty node error recovery put there) is skipped with its
 * children. The path from the root is kept, so a command's parent is at
 * hand (ts_node_parent would search for it from the root). */
static int walk_tree(walk *w, TSNode root)
{
    TSTreeCursor cur = ts_tree_cursor_new(root);
    TSNode *up = NULL; /* the current node's ancestors, the root first */
    size_t depth = 0, cap = 0;
    int rc = 0;
    for (bool more = true; more && rc == 0;) {
        TSNode n = ts_tree_cursor_current_node(&cur);
        TSPoint end = ts_node_end_point(n);
        bool at_start = end.row == 0 && end.column == 0;
        if (!at_start && ts_node_is_named(n) && strcmp(ts_node_type(n), "command") == 0)
            rc = add_command(w, n, depth ? up[depth - 1] : (TSNode){0});
        if (!at_start && ts_tree_cursor_goto_first_child(&cur)) {
            if (depth == cap) {
                cap = cap ? cap * 2 : 64;
                up = xrealloc(up, cap * sizeof *up);
            }
            up[depth++] = n;
            continue;
        }
        while (more && !ts_tree_cursor_goto_next_sibling(&cur))
            if ((more = ts_tree_cursor_goto_parent(&cur)))
                depth--;
    }
    free(up);
    ts_tree_cursor_delete(&cur);
    return rc;
}

/* ---- the parse, within its time ------------------------------------------ */

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* tree-sitter's progress callback (every 100 parse operations): true stops
 * the parse once its thread has spent BASH_ASKS_PARSE_CPU_MS. */
static bool parse_overtime(TSParseState *state)
{
    const int64_t *until = state->payload;
    return thread_cpu_ns() > *until;
}

static const char *read_units(void *payload, uint32_t byte, TSPoint point, uint32_t *bytes_read)
{
    (void)point;
    const utf16 *u = payload;
    *bytes_read = byte < u->n * 2 ? u->n * 2 - byte : 0;
    return *bytes_read ? (const char *)u->units + byte : "";
}

/* The tree of u, or NULL: *rc -ETIME (out of time) or -ENOMEM. */
static TSTree *parse(const utf16 *u, int *rc)
{
    TSParser *parser = ts_parser_new();
    if (!parser || !ts_parser_set_language(parser, tree_sitter_bash())) {
        if (parser)
            ts_parser_delete(parser);
        *rc = -ENOMEM;
        return NULL;
    }
    int64_t until = thread_cpu_ns() + (int64_t)BASH_ASKS_PARSE_CPU_MS * 1000000;
    TSInput input = {(void *)u, read_units, TSInputEncodingUTF16LE, NULL};
    TSTree *tree = ts_parser_parse_with_options(parser, NULL, input, (TSParseOptions){&until, parse_overtime});
    ts_parser_delete(parser);
    *rc = tree ? 0 : thread_cpu_ns() > until ? -ETIME : -ENOMEM;
    return tree;
}

static void empty_answer(bash_asks *out)
{
    cJSON_Delete(out->dirs);
    cJSON_Delete(out->patterns);
    cJSON_Delete(out->always);
    out->dirs = cJSON_CreateArray();
    out->patterns = cJSON_CreateArray();
    out->always = cJSON_CreateArray();
}

static int walk_line(const char *src, const utf16 *u, TSTree *tree, const char *project, bash_asks *out)
{
    char *proj = project && project[0] == '/' ? bash_path_normalize(project) : NULL;
    walk w = {.src = src, .u16 = u, .project = proj, .out = out};
    bash_set_init(&w.patterns);
    bash_set_init(&w.always);
    bash_set_init(&w.dirs);
    bash_set_init(&w.args);
    TSNode root = ts_tree_root_node(tree);
    w.kids = ts_tree_cursor_new(root);
    int rc = walk_tree(&w, root);
    ts_tree_cursor_delete(&w.kids);
    free(w.words);
    bash_set_free(&w.patterns);
    bash_set_free(&w.always);
    bash_set_free(&w.dirs);
    bash_set_free(&w.args);
    free(proj);
    return rc;
}

int bash_asks_of(const char *command, const char *project, bash_asks *out)
{
    out->dirs = out->patterns = out->always = NULL;
    empty_answer(out);
    const char *src = command ? command : "";
    size_t len = strnlen(src, (size_t)BASH_ASKS_MAX_BYTES + 1);
    if (len > BASH_ASKS_MAX_BYTES)
        return -E2BIG;
    utf16 u;
    utf16_of(src, len, &u);
    int rc;
    TSTree *tree = parse(&u, &rc);
    if (tree) {
        rc = walk_line(src, &u, tree, project, out);
        ts_tree_delete(tree);
    }
    free(u.units);
    free(u.at);
    if (rc != 0)
        empty_answer(out);
    return rc;
}

void bash_asks_free(bash_asks *a)
{
    cJSON_Delete(a->dirs);
    cJSON_Delete(a->patterns);
    cJSON_Delete(a->always);
    a->dirs = a->patterns = a->always = NULL;
}
