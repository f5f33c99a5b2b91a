/* libFuzzer target for the chat-template interpreter: the input is a
 * template (chat templates come with model files, so they are outside
 * input); it must compile or be refused with a "template line" message, and
 * a compiled template must render a small conversation or fail cleanly. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *vars;
    if (!vars)
        vars = json_loads("{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"},"
                          " {\"role\": \"user\", \"content\": \"hi {{ }} \\u00e9\"},"
                          " {\"role\": \"assistant\", \"content\": \"hello\", \"tool_calls\": [{\"function\":"
                          " {\"name\": \"f\", \"arguments\": {\"x\": 1}}}]}],"
                          " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}],"
                          " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}",
                          0, NULL);
    struct err e = {{0}};
    struct tmpl *t = tmpl_compile((const char *)data, size, &e);
    if (!t) {
        if (!e.msg[0])
            abort(); /* a refusal must say why */
        return 0;
    }
    char *out = NULL;
    size_t len;
    if (tmpl_render(t, vars, &out, &len, &e) == 0)
        free(out);
    tmpl_free(t);
    return 0;
}
