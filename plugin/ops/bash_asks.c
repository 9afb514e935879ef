/* bash_asks.c — see bash_asks.h. */
#include "ops/bash_asks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tree_sitter/api.h>

#include "base/util.h"

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

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static void add_unique(cJSON *arr, char *s) /* takes s */
{
    const cJSON *it;
    cJSON_ArrayForEach (it, arr) {
        if (strcmp(it->valuestring, s) == 0) {
            free(s);
            return;
        }
    }
    cJSON_AddItemToArray(arr, cJSON_CreateString(s));
    free(s);
}

/* ---- paths, as node's path module treats POSIX paths -------------------- */

/* `path` (absolute) with ".", ".." and repeated or trailing slashes resolved. */
static char *normalize(const char *path)
{
    char *copy = xstrdup(path), *save = NULL;
    strbuf sb = {0};
    size_t *ends = xmalloc(sizeof *ends * (strlen(path) / 2 + 2)), depth = 0;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            if (depth > 0)
                sb.len = ends[--depth];
            continue;
        }
        ends[depth++] = sb.len;
        sb_printf(&sb, "/%s", c);
    }
    if (sb.len == 0)
        sb_puts(&sb, "/");
    else
        sb.buf[sb.len] = '\0';
    free(ends);
    free(copy);
    return sb_take(&sb);
}

/* path.resolve(base, p): p made absolute from base, normalized. */
static char *resolve(const char *base, const char *p)
{
    char *joined = p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", base, p);
    char *r = normalize(joined);
    free(joined);
    return r;
}

static char *parent_dir(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash == p ? xstrdup("/") : xstrndup(p, (size_t)(slash - p));
}

/* !path.relative(dir, p).startsWith(".."): p is dir, or under it by a
 * relative path not starting with ".." (a name like "..x" counts as out). */
static bool inside(const char *dir, const char *p)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return strncmp(p + 1, "..", 2) != 0;
    if (strncmp(p, dir, n) != 0 || (p[n] != '\0' && p[n] != '/'))
        return false;
    return p[n] == '\0' || strncmp(p + n + 1, "..", 2) != 0;
}

/* The directory a path argument makes OpenCode ask about, or NULL: quotes
 * stripped, ~ expanded, cut before a glob, skipped when it expands. */
static char *outside_dir(const char *arg, const char *project)
{
    size_t n = strlen(arg);
    char *a =
        n >= 2 && (arg[0] == '"' || arg[0] == '\'') && arg[n - 1] == arg[0] ? xstrndup(arg + 1, n - 2) : xstrdup(arg);
    const char *home = getenv("HOME");
    if (home && (strcmp(a, "~") == 0 || strncmp(a, "~/", 2) == 0 || strncmp(a, "~\\", 2) == 0)) {
        char *joined = a[1] ? xasprintf("%s/%s", home, a + 2) : xstrdup(home);
        free(a);
        a = joined[0] == '/' ? normalize(joined) : xstrdup(joined);
        free(joined);
    }
    a[strcspn(a, "?*[")] = '\0';
    char *dir = NULL;
    if (a[0] && a[0] != '(' && strncmp(a, "@(", 2) != 0 && !strpbrk(a, "$`")) {
        char *p = resolve(project, a);
        struct stat st;
        if (!inside(project, p))
            dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? xstrdup(p) : parent_dir(p);
        free(p);
    }
    free(a);
    return dir;
}

cJSON *bash_dir_patterns(const cJSON *dirs)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *d;
    cJSON_ArrayForEach (d, dirs) {
        add_unique(out, xasprintf("%s/*", strcmp(d->valuestring, "/") == 0 ? "" : d->valuestring));
    }
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
} walk;

/* A node's text, from the UTF-8 the UTF-16 offsets map back to. */
static char *node_text(const walk *w, TSNode n)
{
    uint32_t a = w->u16->at[ts_node_start_byte(n) / 2], b = w->u16->at[ts_node_end_byte(n) / 2];
    return xstrndup(w->src + a, b > a ? b - a : 0);
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

static char *js_trim(const char *s)
{
    const unsigned char *a = (const unsigned char *)s, *b = a + strlen(s);
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
    return xstrndup((const char *)a, (size_t)(b - a));
}

static bool is_word_type(const char *t)
{
    return strcmp(t, "command_name") == 0 || strcmp(t, "command_name_expr") == 0 || strcmp(t, "word") == 0 ||
           strcmp(t, "string") == 0 || strcmp(t, "raw_string") == 0 || strcmp(t, "concatenation") == 0;
}

/* words[0..n) joined by spaces, cut to the arity table's prefix, + " *". */
static char *always_of(char **words, int n)
{
    int keep = 1;
    bool found = false;
    strbuf key = {0};
    for (int e = n; e > 0 && !found; e--) { /* the longest listed prefix wins */
        key.len = 0;
        for (int i = 0; i < e; i++)
            sb_printf(&key, "%s%s", i ? " " : "", words[i]);
        for (size_t i = 0; i < sizeof arities / sizeof arities[0] && !found; i++)
            if (strcmp(arities[i].prefix, key.buf) == 0) {
                keep = arities[i].words;
                found = true;
            }
    }
    sb_free(&key);
    strbuf sb = {0};
    for (int i = 0; i < keep && i < n; i++)
        sb_printf(&sb, "%s%s", i ? " " : "", words[i]);
    sb_puts(&sb, " *");
    return sb_take(&sb);
}

/* One `command` node: its path arguments, its patterns. */
static void add_command(const walk *w, TSNode cmd)
{
    uint32_t count = ts_node_child_count(cmd);
    char **words = xcalloc(count + 1, sizeof *words);
    int n = 0;
    for (uint32_t i = 0; i < count; i++) {
        TSNode c = ts_node_child(cmd, i);
        if (is_word_type(ts_node_type(c)))
            words[n++] = node_text(w, c);
    }
    if (n > 0 && words[0][0] && w->project && in_list(words[0], path_takers)) {
        for (int i = 1; i < n; i++) {
            if (words[i][0] == '-' || (strcmp(words[0], "chmod") == 0 && words[i][0] == '+'))
                continue;
            char *dir = outside_dir(words[i], w->project);
            if (dir)
                add_unique(w->out->dirs, dir);
        }
    }
    if (n > 0 && (!words[0][0] || !in_list(words[0], dir_changers))) {
        TSNode parent = ts_node_parent(cmd);
        bool redirected = !ts_node_is_null(parent) && strcmp(ts_node_type(parent), "redirected_statement") == 0;
        char *text = node_text(w, redirected ? parent : cmd);
        add_unique(w->out->patterns, js_trim(text));
        free(text);
        add_unique(w->out->always, always_of(words, n));
    }
    for (int i = 0; i < n; i++)
        free(words[i]);
    free(words);
}

/* Every node of the tree in document order (pre-order): each `command`.
 * As web-tree-sitter's descendantsOfType walks: a node that ends at the very
 * start (an empty node error recovery put there) is skipped with its
 * children. */
static void walk_tree(const walk *w, TSNode root)
{
    TSTreeCursor cur = ts_tree_cursor_new(root);
    for (;;) {
        TSNode n = ts_tree_cursor_current_node(&cur);
        TSPoint end = ts_node_end_point(n);
        bool at_start = end.row == 0 && end.column == 0;
        if (!at_start && ts_node_is_named(n) && strcmp(ts_node_type(n), "command") == 0)
            add_command(w, n);
        if (!at_start && ts_tree_cursor_goto_first_child(&cur))
            continue;
        while (!ts_tree_cursor_goto_next_sibling(&cur))
            if (!ts_tree_cursor_goto_parent(&cur)) {
                ts_tree_cursor_delete(&cur);
                return;
            }
    }
}

int bash_asks_of(const char *command, const char *project, bash_asks *out)
{
    out->dirs = cJSON_CreateArray();
    out->patterns = cJSON_CreateArray();
    out->always = cJSON_CreateArray();
    const char *src = command ? command : "";
    TSParser *parser = ts_parser_new();
    if (!parser || !ts_parser_set_language(parser, tree_sitter_bash())) {
        if (parser)
            ts_parser_delete(parser);
        return -ENOMEM;
    }
    utf16 u;
    utf16_of(src, strlen(src), &u);
    TSTree *tree =
        ts_parser_parse_string_encoding(parser, NULL, (const char *)u.units, u.n * 2, TSInputEncodingUTF16LE);
    if (!tree) {
        free(u.units);
        free(u.at);
        ts_parser_delete(parser);
        return -ENOMEM;
    }
    char *proj = project && project[0] == '/' ? normalize(project) : NULL;
    walk w = {src, &u, proj, out};
    walk_tree(&w, ts_tree_root_node(tree));
    free(proj);
    free(u.units);
    free(u.at);
    ts_tree_delete(tree);
    ts_parser_delete(parser);
    return 0;
}

void bash_asks_free(bash_asks *a)
{
    cJSON_Delete(a->dirs);
    cJSON_Delete(a->patterns);
    cJSON_Delete(a->always);
    a->dirs = a->patterns = a->always = NULL;
}
