/* js.c — JS value helpers [js]: strings, properties, calls, JSON, promises.
 * A missing or wrong-typed value gives NULL (or -1) rather than an exception,
 * so that a hook can carry on with what it has; see adapter.h for each
 * contract. */
#include "adapter.h"

#include <stdlib.h>

/* Throws a JS Error with the message and returns NULL (for callbacks). */
napi_value throw_msg(napi_env env, const char *msg)
{
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending)
        napi_throw_error(env, NULL, msg);
    return NULL;
}

/* Clears a pending JS exception, returning its text (malloc'd) or NULL. */
char *take_exception(napi_env env)
{
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending)
        return NULL;
    napi_value e, s;
    napi_get_and_clear_last_exception(env, &e);
    char *out = NULL;
    if (napi_coerce_to_string(env, e, &s) == napi_ok) {
        size_t n = 0;
        napi_get_value_string_utf8(env, s, NULL, 0, &n);
        out = malloc(n + 1);
        if (out)
            napi_get_value_string_utf8(env, s, out, n + 1, &n);
    }
    return out ? out : xstrdup("JavaScript exception");
}

/* A JS string value as a malloc'd UTF-8 string; NULL when not a string. */
char *js_string(napi_env env, napi_value v)
{
    napi_valuetype t;
    if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_string)
        return NULL;
    size_t n = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok)
        return NULL;
    char *s = malloc(n + 1);
    if (s)
        napi_get_value_string_utf8(env, v, s, n + 1, &n);
    return s;
}

napi_value js_str(napi_env env, const char *s)
{
    napi_value v;
    napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v);
    return v;
}

napi_value js_undefined(napi_env env)
{
    napi_value v;
    napi_get_undefined(env, &v);
    return v;
}

napi_value js_get(napi_env env, napi_value obj, const char *key)
{
    napi_valuetype t;
    if (!obj || napi_typeof(env, obj, &t) != napi_ok || (t != napi_object && t != napi_function))
        return NULL;
    napi_value v;
    if (napi_get_named_property(env, obj, key, &v) != napi_ok)
        return NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null)
        return NULL;
    return v;
}

int js_is(napi_env env, napi_value v, napi_valuetype want)
{
    napi_valuetype t;
    return v && napi_typeof(env, v, &t) == napi_ok && t == want;
}

/* Calls obj[method](...args); NULL on exception (left pending). */
napi_value js_call_method(napi_env env, napi_value obj, const char *method, size_t argc, const napi_value *argv)
{
    napi_value fn = js_get(env, obj, method), res;
    if (!js_is(env, fn, napi_function))
        return NULL;
    if (napi_call_function(env, obj, fn, argc, argv, &res) != napi_ok)
        return NULL;
    return res;
}

napi_value js_global(napi_env env, const char *name)
{
    napi_value g;
    napi_get_global(env, &g);
    return js_get(env, g, name);
}

/* JSON.stringify(v) as a malloc'd string (NULL for undefined or on error). */
char *js_stringify(napi_env env, napi_value v)
{
    napi_value json = js_global(env, "JSON");
    napi_value s = js_call_method(env, json, "stringify", 1, &v);
    if (!s) {
        free(take_exception(env));
        return NULL;
    }
    return js_string(env, s);
}

/* JSON.parse(text); NULL on error (exception cleared). */
napi_value js_parse(napi_env env, const char *text)
{
    napi_value json = js_global(env, "JSON"), arg = js_str(env, text);
    napi_value v = js_call_method(env, json, "parse", 1, &arg);
    if (!v)
        free(take_exception(env));
    return v;
}

/* Replaces the contents of the JS array `arr` with those of `items`, in place
 * (OpenCode keeps its own reference to the array it passed to the hook). */
int js_array_replace(napi_env env, napi_value arr, napi_value items)
{
    bool is_arr = false;
    if (napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr)
        return -1;
    if (napi_is_array(env, items, &is_arr) != napi_ok || !is_arr)
        return -1;
    uint32_t m = 0;
    napi_get_array_length(env, items, &m);
    napi_value len0;
    napi_create_uint32(env, 0, &len0);
    if (napi_set_named_property(env, arr, "length", len0) != napi_ok)
        return -1;
    for (uint32_t i = 0; i < m; i++) {
        napi_value it;
        napi_get_element(env, items, i, &it);
        napi_set_element(env, arr, i, it);
    }
    return 0;
}

/* For hooks that must return a Promise whatever happens. */
napi_value rejected(napi_env env, const char *msg)
{
    napi_deferred d;
    napi_value p, err;
    napi_create_promise(env, &d, &p);
    napi_create_error(env, NULL, js_str(env, msg), &err);
    napi_reject_deferred(env, d, err);
    return p;
}

napi_value resolved(napi_env env)
{
    napi_deferred d;
    napi_value p;
    napi_create_promise(env, &d, &p);
    napi_resolve_deferred(env, d, js_undefined(env));
    return p;
}

napi_value add_fn(napi_env env, napi_value obj, const char *key, napi_callback cb, void *data)
{
    napi_value fn;
    napi_create_function(env, key, NAPI_AUTO_LENGTH, cb, data, &fn);
    napi_set_named_property(env, obj, key, fn);
    return fn;
}
