/*
 * schema.c — tool arguments [js]: OpenCode wants a zod *shape* ({name: zod
 * type}) and validates the model's arguments with it before execute(). Built
 * from each tool's JSON Schema with tool.schema (zod); without zod, the raw
 * JSON Schema of each property (then every argument is required).
 */
#include "adapter.h"

#include <stdlib.h>
#include <string.h>

/* recv[m](...argv), exception cleared: NULL when zod lacks it or it threw. */
static napi_value zcall(napi_env env, napi_value recv, const char *m, size_t argc, const napi_value *argv)
{
    napi_value v = js_call_method(env, recv, m, argc, argv);
    if (!v)
        free(take_exception(env));
    return v;
}

/* The zod type for one JSON Schema property; z.any() for what it does not know. */
static napi_value zod_type(napi_env env, napi_value z, const cJSON *s)
{
    const cJSON *type = cJSON_GetObjectItem(s, "type");
    const char *t = NULL;
    if (cJSON_IsString(type))
        t = type->valuestring;
    else if (cJSON_IsArray(type)) {
        const cJSON *e;
        cJSON_ArrayForEach (e, type)
            if (cJSON_IsString(e) && strcmp(e->valuestring, "null"))
                t = e->valuestring;
    }
    const cJSON *en = cJSON_GetObjectItem(s, "enum");
    napi_value v = NULL;
    if (cJSON_IsArray(en) && cJSON_GetArraySize(en) > 0 && (!t || !strcmp(t, "string"))) {
        napi_value arr;
        napi_create_array(env, &arr);
        uint32_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach (e, en)
            if (cJSON_IsString(e))
                napi_set_element(env, arr, i++, js_str(env, e->valuestring));
        v = zcall(env, z, "enum", 1, &arr);
    } else if (t && !strcmp(t, "string")) {
        v = zcall(env, z, "string", 0, NULL);
    } else if (t && !strcmp(t, "number")) {
        v = zcall(env, z, "number", 0, NULL);
    } else if (t && !strcmp(t, "integer")) {
        v = zcall(env, z, "number", 0, NULL);
        napi_value iv = v ? zcall(env, v, "int", 0, NULL) : NULL;
        if (iv)
            v = iv;
    } else if (t && !strcmp(t, "boolean")) {
        v = zcall(env, z, "boolean", 0, NULL);
    } else if (t && !strcmp(t, "array")) {
        const cJSON *items = cJSON_GetObjectItem(s, "items");
        napi_value it = cJSON_IsObject(items) ? zod_type(env, z, items) : NULL;
        if (!it)
            it = zcall(env, z, "any", 0, NULL);
        v = it ? zcall(env, z, "array", 1, &it) : NULL;
    } else if (t && !strcmp(t, "object")) {
        napi_value k = zcall(env, z, "string", 0, NULL), a = zcall(env, z, "any", 0, NULL);
        napi_value args[2] = {k, a};
        v = k && a ? zcall(env, z, "record", 2, args) : NULL;
    }
    if (!v)
        v = zcall(env, z, "any", 0, NULL);
    return v;
}

/* args for one tool: {name: zod} (or raw JSON Schema per property without zod). */
napi_value tool_args(napi_env env, napi_value z, const char *schema_json)
{
    napi_value shape;
    napi_create_object(env, &shape);
    cJSON *schema = cJSON_Parse(schema_json ? schema_json : "{}");
    const cJSON *props = cJSON_GetObjectItem(schema, "properties");
    const cJSON *req = cJSON_GetObjectItem(schema, "required");
    const cJSON *p;
    cJSON_ArrayForEach (p, props) {
        int required = 0;
        const cJSON *r;
        cJSON_ArrayForEach (r, req)
            if (cJSON_IsString(r) && !strcmp(r->valuestring, p->string))
                required = 1;
        napi_value v = NULL;
        if (z) {
            v = zod_type(env, z, p);
            const cJSON *d = cJSON_GetObjectItem(p, "description");
            if (v && cJSON_IsString(d)) {
                napi_value ds = js_str(env, d->valuestring), dv = zcall(env, v, "describe", 1, &ds);
                if (dv)
                    v = dv;
            }
            if (v && !required) {
                napi_value ov = zcall(env, v, "optional", 0, NULL);
                if (ov)
                    v = ov;
            }
        }
        if (!v) {
            char *t = cJSON_PrintUnformatted(p);
            v = t ? js_parse(env, t) : NULL;
            free(t);
        }
        if (v)
            napi_set_named_property(env, shape, p->string, v);
    }
    cJSON_Delete(schema);
    return shape;
}
