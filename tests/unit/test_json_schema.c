/* The JSON Schema front end (grammar/json_schema.h), checked with the
 * reference recognizer (gir_match): accepted and rejected texts for each
 * keyword (objects with every subset of optional properties, additional
 * properties and the names they may not reuse, arrays with prefixes and
 * bounds, enums in every spelling, integer ranges exhaustively, decimal
 * bounds against strtod, string lengths counted in characters, formats,
 * recursion through $ref, anyOf / oneOf / allOf), every error with the
 * keyword and path it names, what strict = 0 notes instead, and the
 * whitespace: compact, flexible, and its bound. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gir_match.h"
#include "grammar/json_schema.h"

struct built {
    struct gir g;
    struct json_schema_notes notes;
};

static int build(struct built *b, const char *schema, int strict, int ws_max, struct err *e)
{
    gir_init(&b->g);
    memset(&b->notes, 0, sizeof(b->notes));
    struct json_schema_opts o = {strict, ws_max, 0};
    return json_schema_from_text(schema, strlen(schema), &o, &b->notes, &b->g, e);
}

static void done(struct built *b)
{
    json_schema_notes_free(&b->notes);
    gir_free(&b->g);
}

/* Builds schema (strict, compact) or fails the test. */
static void ok_ws(struct built *b, const char *schema, int ws_max)
{
    struct err e = {{0}};
    cr_assert(build(b, schema, 1, ws_max, &e) == 0, "%s refused: %s", schema, e.msg);
}

static void ok(struct built *b, const char *schema) { ok_ws(b, schema, -1); }

static void accepts(const struct built *b, const char *const *texts)
{
    for (; *texts; texts++)
        cr_expect(gir_match_str(&b->g, *texts), "should accept %s", *texts);
}

static void rejects(const struct built *b, const char *const *texts)
{
    for (; *texts; texts++)
        cr_expect(!gir_match_str(&b->g, *texts), "should reject %s", *texts);
}

#define YES(...) accepts(&b, (const char *const[]){__VA_ARGS__, NULL})
#define NO(...) rejects(&b, (const char *const[]){__VA_ARGS__, NULL})

/* schema is refused (strict) with a message containing each of the parts. */
static void refused(const char *schema, const char *part1, const char *part2)
{
    struct built b;
    struct err e = {{0}};
    cr_assert(build(&b, schema, 1, -1, &e) < 0, "%s should be refused", schema);
    cr_expect(strstr(e.msg, part1), "'%s': message '%s' lacks '%s'", schema, e.msg, part1);
    if (part2)
        cr_expect(strstr(e.msg, part2), "'%s': message '%s' lacks '%s'", schema, e.msg, part2);
    done(&b);
}

/* Not strict: schema builds and its notes contain note. */
static void noted(const char *schema, const char *note)
{
    struct built b;
    struct err e = {{0}};
    cr_assert(build(&b, schema, 0, -1, &e) == 0, "%s refused with strict 0: %s", schema, e.msg);
    int found = 0;
    for (int i = 0; i < b.notes.n_ignored; i++)
        found |= strstr(b.notes.ignored[i], note) != NULL;
    cr_expect(found, "'%s': no note contains '%s' (%d notes%s%s)", schema, note, b.notes.n_ignored,
              b.notes.n_ignored ? ", first: " : "", b.notes.n_ignored ? b.notes.ignored[0] : "");
    done(&b);
}

/* --- types ---------------------------------------------------------------------- */

Test(json_schema, types)
{
    struct built b;
    ok(&b, "{\"type\": \"null\"}");
    YES("null");
    NO("nul", "0", "\"null\"", "false");
    done(&b);
    ok(&b, "{\"type\": \"boolean\"}");
    YES("true", "false");
    NO("null", "1", "\"true\"");
    done(&b);
    ok(&b, "{\"type\": \"integer\"}");
    YES("0", "-0", "7", "-12", "1234567890123456789012345");
    NO("1.0", "1e3", "01", "+1", "-", "", "\"1\"");
    done(&b);
    ok(&b, "{\"type\": \"number\"}");
    YES("0", "-0.5", "1.25e-7", "1E+3", "12e3", "3.0");
    NO("01", ".5", "5.", "1e", "--1", "0x1", "NaN");
    done(&b);
    ok(&b, "{\"type\": \"string\"}");
    YES("\"\"", "\"abc\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u00e9\\uD83D\\uDE00\"", "\"\xc3\xa9\"");
    NO("\"a", "abc", "\"\\x\"", "\"\\u12\"", "\"\x01\"", "\"\\ud800\"", "\"\\udc00\\ud800\"", "\"a\"b\"");
    done(&b);
    ok(&b, "{\"type\": [\"string\", \"null\"]}");
    YES("\"x\"", "null");
    NO("1", "{}");
    done(&b);
    ok(&b, "{\"type\": \"string\", \"nullable\": true}");
    YES("\"x\"", "null");
    NO("1");
    done(&b);
}

Test(json_schema, any_value)
{
    const char *schemas[] = {"true", "{}",
                             "{\"description\": \"anything\", \"$comment\": \"x\", \"title\": \"t\"}"};
    for (size_t i = 0; i < 3; i++) {
        struct built b;
        ok(&b, schemas[i]);
        YES("null", "true", "1.5e3", "\"s\"", "[]", "[1,[2,{}]]", "{}", "{\"a\":{\"b\":[null]}}",
            "{\"a\":1,\"a\":2}");
        NO("", "[1,]", "{\"a\"}", "{1:2}", "nul", "[1 2]");
        done(&b);
    }
    struct built b;
    struct err e = {{0}};
    gir_init(&b.g);
    memset(&b.notes, 0, sizeof(b.notes));
    struct json_schema_opts o = {1, 2, 0};
    cr_assert(json_object_to_gir(&b.g, &o, &e) == 0, "%s", e.msg);
    YES("{}", " { \"a\" : [ 1 ] } ", "{\"a\":{\"b\":{}}}");
    NO("[]", "1", "\"{}\"", "{   }");
    done(&b);
}

/* --- objects --------------------------------------------------------------------- */

/* Every subset of 4 properties (b and d required), in order: accepted
 * exactly when both required ones are in; never out of order. */
Test(json_schema, object_optional_subsets)
{
    struct built b;
    ok(&b, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},"
           "\"c\":{\"type\":\"integer\"},\"d\":{\"type\":\"integer\"}},\"required\":[\"d\",\"b\"],"
           "\"additionalProperties\":false}");
    const char *names = "abcd";
    for (int set = 0; set < 16; set++) {
        char text[128] = "{";
        for (int i = 0; i < 4; i++)
            if (set & (1 << i)) {
                if (text[1])
                    strcat(text, ",");
                char m[16];
                snprintf(m, sizeof(m), "\"%c\":%d", names[i], i);
                strcat(text, m);
            }
        strcat(text, "}");
        int want = (set & 2) && (set & 8);
        cr_expect_eq(gir_match_str(&b.g, text), want, "%s: expected %d", text, want);
    }
    NO("{\"d\":1,\"b\":1}", "{\"b\":1,,\"d\":1}", "{,\"b\":1,\"d\":1}", "{\"b\":1,\"d\":1,}",
       "{\"b\":1,\"d\":1,\"e\":1}", "{\"b\":1,\"b\":1,\"d\":1}", "{\"b\":\"x\",\"d\":1}");
    done(&b);
    /* all optional: the empty object too, and no stray comma whichever is left out */
    ok(&b, "{\"properties\":{\"a\":{},\"b\":{},\"c\":{}},\"additionalProperties\":false}");
    YES("{}", "{\"a\":1}", "{\"b\":1}", "{\"c\":1}", "{\"a\":1,\"c\":2}", "{\"b\":[],\"c\":{}}",
        "{\"a\":1,\"b\":2,\"c\":3}");
    NO("{,}", "{\"a\":1,}", "{,\"c\":1}", "{\"c\":1,\"a\":1}");
    done(&b);
}

Test(json_schema, object_many_optional_properties_stay_small)
{
    /* 300 optional properties: linear in size, not exponential */
    char *s = malloc(300 * 40 + 100);
    strcpy(s, "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{");
    for (int i = 0; i < 300; i++)
        sprintf(s + strlen(s), "%s\"p%d\":{\"type\":\"integer\"}", i ? "," : "", i);
    strcat(s, "}}");
    struct built b;
    ok(&b, s);
    cr_expect(b.g.n_nodes < 200000, "%d nodes", b.g.n_nodes);
    YES("{}", "{\"p0\":1}", "{\"p299\":1}", "{\"p5\":1,\"p17\":2,\"p299\":3}");
    NO("{\"p17\":2,\"p5\":1}", "{\"p300\":1}");
    done(&b);
    free(s);
}

Test(json_schema, additional_properties)
{
    struct built b;
    /* absent: any extra key after the listed ones, never a listed name (in any spelling) */
    ok(&b,
       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"ab\":{\"type\":\"string\"}}}");
    YES("{}", "{\"a\":1}", "{\"a\":1,\"ab\":\"x\"}", "{\"z\":[true]}", "{\"a\":1,\"z\":null,\"y\":2}",
        "{\"\":0}", "{\"b\":1}", "{\"abc\":1}", "{\"a\\u0062c\":1}", "{\"\\u0061\":1}");
    NO("{\"z\":1,\"a\":1}", "{\"a\":1,\"a\":2}", "{\"a\":1,\"\\u0061\":\"s\"}",
       "{\"ab\":\"x\",\"a\\u0062\":2}", "{\"a\":\"x\"}");
    done(&b);
    /* a schema: extras must match it */
    ok(&b, "{\"properties\":{\"id\":{\"type\":\"integer\"}},\"required\":[\"id\"],"
           "\"additionalProperties\":{\"type\":\"string\"}}");
    YES("{\"id\":1}", "{\"id\":1,\"x\":\"a\",\"y\":\"b\"}");
    NO("{\"id\":1,\"x\":2}", "{\"x\":\"a\"}", "{\"id\":1,\"id\":\"s\"}");
    done(&b);
    /* true and false */
    ok(&b, "{\"properties\":{\"a\":{}},\"additionalProperties\":true}");
    YES("{\"a\":1,\"b\":2}");
    done(&b);
    ok(&b, "{\"properties\":{\"a\":{}},\"additionalProperties\":false}");
    NO("{\"a\":1,\"b\":2}", "{\"b\":2}");
    done(&b);
    /* an optional property whose schema is false may just not appear */
    ok(&b, "{\"properties\":{\"a\":false,\"b\":{}}}");
    YES("{}", "{\"b\":1}", "{\"c\":1}");
    NO("{\"a\":1}");
    done(&b);
    /* required names missing from properties come as additional properties, after the listed ones */
    ok(&b, "{\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"b\"],"
           "\"additionalProperties\":{\"type\":\"boolean\"}}");
    YES("{\"b\":true}", "{\"a\":1,\"b\":false}", "{\"a\":1,\"b\":false,\"c\":true}");
    NO("{}", "{\"a\":1}", "{\"b\":1}", "{\"b\":true,\"b\":true}");
    done(&b);
    /* maxProperties 0: only the empty object */
    ok(&b, "{\"type\":\"object\",\"maxProperties\":0}");
    YES("{}");
    NO("{\"a\":1}");
    done(&b);
    /* minProperties met by the required ones */
    ok(&b, "{\"properties\":{\"a\":{},\"b\":{}},\"required\":[\"a\"],\"minProperties\":1,\"maxProperties\":2,"
           "\"additionalProperties\":false}");
    YES("{\"a\":1}", "{\"a\":1,\"b\":2}");
    done(&b);
}

/* --- arrays --------------------------------------------------------------------- */

Test(json_schema, arrays)
{
    struct built b;
    ok(&b, "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":4}");
    YES("[1,2]", "[1,2,3]", "[1,2,3,4]");
    NO("[]", "[1]", "[1,2,3,4,5]", "[1,\"a\"]", "[1,2,]", "[,1,2]", "[1 2]");
    done(&b);
    ok(&b, "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
           "\"items\":{\"type\":\"boolean\"},\"minItems\":1}");
    YES("[1]", "[1,\"a\"]", "[1,\"a\",true]", "[1,\"a\",true,false,true]");
    NO("[]", "[\"a\"]", "[1,2]", "[1,\"a\",1]");
    done(&b);
    ok(&b, "{\"prefixItems\":[{\"const\":1},{\"const\":2}],\"items\":false}");
    YES("[]", "[1]", "[1,2]");
    NO("[1,2,3]", "[2]");
    done(&b);
    ok(&b, "{\"prefixItems\":[{\"const\":1},{\"const\":2}],\"maxItems\":1}");
    YES("[]", "[1]");
    NO("[1,2]");
    done(&b);
    /* the pre-2020 tuple form */
    ok(&b, "{\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"null\"}}");
    YES("[]", "[\"a\"]", "[\"a\",null,null]");
    NO("[1]", "[\"a\",1]");
    done(&b);
    ok(&b, "{\"type\":\"array\",\"maxItems\":0}");
    YES("[]");
    NO("[1]");
    done(&b);
    ok(&b, "{\"type\":\"array\",\"uniqueItems\":true,\"maxItems\":1}");
    YES("[]", "[1]");
    done(&b);
    ok(&b, "{\"type\":\"array\",\"uniqueItems\":false}");
    YES("[1,1]");
    done(&b);
    /* bounds past the IR's repetition limit take a nested form */
    ok(&b, "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":200000}");
    YES("[]", "[1]", "[1,2,3]");
    done(&b);
    ok(&b, "{\"type\":\"array\",\"items\":{\"const\":0},\"minItems\":3,\"maxItems\":3}");
    YES("[0,0,0]");
    NO("[0,0]", "[0,0,0,0]");
    done(&b);
}

Test(json_schema, big_repetitions)
{
    /* past GIR_MAX_REPEAT the bounds nest: (x{65536}){q} x{r}, and the
     * reference recognizer is too slow for texts that long, so short texts
     * and the shape of the grammar are checked */
    struct built b;
    ok(&b, "{\"type\":\"string\",\"minLength\":65537,\"maxLength\":200000}");
    NO("\"\"", "\"abc\"");
    char *d = gir_dump(&b.g);
    cr_expect(strstr(d, "{65536,65536}") && strstr(d, "{0,65535}") && strstr(d, "{2,2}") &&
                  strstr(d, "{0,3391}"),
              "%s", d);
    free(d);
    done(&b);
    ok(&b, "{\"type\":\"string\",\"maxLength\":200000}");
    YES("\"\"", "\"abc\"");
    d = gir_dump(&b.g);
    cr_expect(strstr(d, "{0,2}") && strstr(d, "{0,65535}") && strstr(d, "{3,3}") && strstr(d, "{0,3392}"),
              "%s", d);
    free(d);
    done(&b);
}

/* --- enum and const --------------------------------------------------------------- */

Test(json_schema, enum_strings_every_spelling)
{
    struct built b;
    ok(&b, "{\"enum\":[\"a\\\"b\", \"\xc3\xa9t\xc3\xa9\", \"\xf0\x9f\x98\x80\", \"x/y\", \"tab\\there\", "
           "\"\\u0001\"]}");
    YES("\"a\\\"b\"", "\"a\\u0022b\"", "\"\\u0061\\u0022\\u0062\"", "\"\xc3\xa9t\xc3\xa9\"",
        "\"\\u00e9t\\u00E9\"");
    done(&b);
    ok(&b, "{\"enum\":[\"a\\\"b\", \"\xc3\xa9t\xc3\xa9\", \"\xf0\x9f\x98\x80\", \"x/y\", \"tab\\there\", "
           "\"\\u0001\"]}");
    YES("\"\xf0\x9f\x98\x80\"", "\"\\ud83d\\ude00\"", "\"\\uD83D\\uDE00\"", "\"x/y\"", "\"x\\/y\"",
        "\"tab\\there\"", "\"tab\\u0009here\"", "\"\\u0001\"");
    NO("\"a\"b\"", "\"\\u00C9t\xc3\xa9\"", "\"\\ud83d\"", "\"x\\\\y\"", "\"tab\there\"", "\"\x01\"", "\"\"",
       "a");
    done(&b);
}

Test(json_schema, enum_numbers_and_structures)
{
    struct built b;
    ok(&b, "{\"enum\":[1, -2.5, 0, null, true, [1, {\"k\": \"v\"}], {\"a\": 1, \"b\": [null]}, 1e21]}");
    YES("1", "1.0", "1.000", "-2.5", "-2.50", "0", "-0", "0.0", "-0.00", "null", "true", "[1,{\"k\":\"v\"}]",
        "[1.0,{\"\\u006b\":\"v\"}]", "{\"a\":1,\"b\":[null]}", "1000000000000000000000",
        "1000000000000000000000.0");
    NO("2", "-1", "1.", "1e0", "-2.51", "2.5", "false", "[1]", "[{\"k\":\"v\"},1]", "{\"a\":1}", "01", "+1",
       "1000000000000000000001");
    done(&b);
    ok_ws(&b, "{\"const\":{\"a\":[1,2]}}", 1);
    YES("{\"a\":[1,2]}", " { \"a\" : [ 1 , 2 ] } ");
    NO("{\"a\":[1,2,3]}", "{  \"a\":[1,2]}");
    done(&b);
    /* the const of a type that excludes it accepts nothing */
    refused("{\"type\":\"string\",\"const\":1}", "accepts nothing", NULL);
    /* enum values filtered by the other keywords */
    ok(&b, "{\"type\":\"integer\",\"minimum\":2,\"enum\":[1,2,3,\"x\",2.5,4.0]}");
    YES("2", "3", "4", "4.0");
    NO("1", "\"x\"", "2.5");
    done(&b);
    ok(&b, "{\"enum\":[\"ab\",\"abc\",\"abcd\"],\"maxLength\":3}");
    YES("\"ab\"", "\"abc\"");
    NO("\"abcd\"");
    done(&b);
    ok(&b, "{\"allOf\":[{\"enum\":[1,2,3]},{\"enum\":[3,2.0,4]}]}");
    YES("2", "3");
    NO("1", "4");
    done(&b);
    refused("{\"const\":[1,2],\"maxItems\":1}", "accepts nothing", NULL);
}

Test(json_schema, huge_enum)
{
    char *s = malloc(20000 * 16 + 64);
    strcpy(s, "{\"enum\":[");
    for (int i = 0; i < 20000; i++)
        sprintf(s + strlen(s), "%s\"v%d\"", i ? "," : "", i);
    strcat(s, "]}");
    struct built b;
    ok(&b, s);
    YES("\"v0\"", "\"v19999\"", "\"v123\"");
    NO("\"v20000\"", "\"v\"");
    done(&b);
    free(s);
}

/* --- numbers ------------------------------------------------------------------------ */

static const char *const int_bounds[] = {"",
                                         "\"minimum\":-5,\"maximum\":1234",
                                         "\"minimum\":0",
                                         "\"exclusiveMinimum\":0",
                                         "\"maximum\":-1",
                                         "\"exclusiveMaximum\":-100",
                                         "\"minimum\":-120,\"maximum\":-99",
                                         "\"minimum\":7,\"maximum\":7",
                                         "\"exclusiveMinimum\":9,\"exclusiveMaximum\":100",
                                         "\"minimum\":-0.5,\"maximum\":10.5",
                                         "\"minimum\":1.5",
                                         "\"maximum\":99,\"minimum\":-9",
                                         "\"exclusiveMinimum\":-1.5,\"exclusiveMaximum\":0"};
static const double int_lo[] = {-1e9, -5, 0, 1, -1e9, -1e9, -120, 7, 10, 0, 2, -9, -1};
static const double int_hi[] = {1e9, 1234, 1e9, 1e9, -1, -101, -99, 7, 99, 10, 1e9, 99, -1};

Test(json_schema, integer_ranges_exhaustive)
{
    for (size_t k = 0; k < sizeof(int_bounds) / sizeof(int_bounds[0]); k++) {
        char schema[256];
        snprintf(schema, sizeof(schema), "{\"type\":\"integer\"%s%s}", int_bounds[k][0] ? "," : "",
                 int_bounds[k]);
        struct built b;
        ok(&b, schema);
        for (int v = -130; v <= 1300; v += v < -20 || v > 140 ? 7 : 1) {
            char t[32];
            snprintf(t, sizeof(t), "%d", v);
            int want = v >= int_lo[k] && v <= int_hi[k];
            cr_expect_eq(gir_match_str(&b.g, t), want, "%s: %s expected %d", schema, t, want);
        }
        int zero = 0 >= int_lo[k] && 0 <= int_hi[k];
        cr_expect_eq(gir_match_str(&b.g, "-0"), zero, "%s: -0", schema);
        cr_expect(!gir_match_str(&b.g, "007") && !gir_match_str(&b.g, "1.0") && !gir_match_str(&b.g, "1e1"),
                  "%s", schema);
        done(&b);
    }
}

Test(json_schema, integer_big_bounds)
{
    struct built b;
    ok(&b, "{\"type\":\"integer\",\"minimum\":9007199254740993,\"maximum\":1e20}");
    YES("9007199254740993", "9007199254740994", "99999999999999999999", "100000000000000000000",
        "12345678901234567890");
    NO("9007199254740992", "100000000000000000001", "1000000000000000000000", "-9007199254740993");
    done(&b);
    ok(&b, "{\"type\":\"integer\",\"maximum\":-9223372036854775808}");
    YES("-9223372036854775808", "-9223372036854775809", "-100000000000000000000");
    NO("-9223372036854775807", "0");
    done(&b);
}

/* Decimal strings against decimal bounds: the grammar agrees with strtod
 * on every string of up to 6 digits (exact there), and never takes an
 * exponent. */
Test(json_schema, number_decimal_bounds)
{
    static const char *const bounds[] = {
        "\"minimum\":0,\"maximum\":1",
        "\"exclusiveMinimum\":0.5,\"maximum\":1",
        "\"minimum\":-0.25,\"exclusiveMaximum\":10.05",
        "\"exclusiveMinimum\":-100,\"exclusiveMaximum\":-99.5",
        "\"minimum\":0.001",
        "\"maximum\":-0.5",
        "\"minimum\":2.5,\"maximum\":2.5",
        "\"exclusiveMinimum\":1.999,\"exclusiveMaximum\":2.001",
    };
    static const double lo[] = {0, 0.5, -0.25, -100, 0.001, -1e300, 2.5, 1.999};
    static const double hi[] = {1, 1, 10.05, -99.5, 1e300, -0.5, 2.5, 2.001};
    static const int lo_ex[] = {0, 1, 0, 1, 0, 0, 0, 1}, hi_ex[] = {0, 0, 1, 1, 0, 0, 0, 1};
    static const char *const ints[] = {"0", "1", "2", "9", "10", "99", "100", "101"};
    static const char *const fracs[] = {"",    ".0",   ".00",  ".001",  ".05",    ".1",
                                        ".25", ".249", ".251", ".5",    ".50",    ".501",
                                        ".75", ".9",   ".999", ".0001", ".05001", ".04999"};
    for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
        char schema[256];
        snprintf(schema, sizeof(schema), "{\"type\":\"number\",%s}", bounds[k]);
        struct built b;
        ok(&b, schema);
        for (int neg = 0; neg < 2; neg++)
            for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
                for (size_t f = 0; f < sizeof(fracs) / sizeof(fracs[0]); f++) {
                    char t[64];
                    snprintf(t, sizeof(t), "%s%s%s", neg ? "-" : "", ints[i], fracs[f]);
                    double v = strtod(t, NULL);
                    int want = (lo_ex[k] ? v > lo[k] : v >= lo[k]) && (hi_ex[k] ? v < hi[k] : v <= hi[k]);
                    cr_expect_eq(gir_match_str(&b.g, t), want, "%s: %s expected %d", schema, t, want);
                }
        NO("5e-1", "1E0", "0.5e0");
        done(&b);
    }
}

Test(json_schema, number_unbounded_and_multiple_of_one)
{
    struct built b;
    ok(&b, "{\"type\":\"number\",\"multipleOf\":1}");
    YES("1", "-20");
    NO("1.5", "1e3");
    done(&b);
    ok(&b, "{\"type\":\"integer\",\"multipleOf\":1.0}");
    YES("3");
    done(&b);
    ok(&b, "{\"type\":[\"number\",\"null\"],\"minimum\":5,\"maximum\":1}"); /* no number fits */
    YES("null");
    NO("5", "1", "3");
    done(&b);
    refused("{\"type\":\"number\",\"minimum\":5,\"maximum\":1}", "accepts nothing", NULL);
}

/* Whole multipleOf: every integer divisible by it (checked exhaustively over a range), with 0 as a
 * bound or none; two of them in an allOf mean their least common multiple; enum values filtered. */
Test(json_schema, multiple_of_whole_numbers)
{
    static const struct {
        const char *schema;
        int k, min_ok, max_ok; /* min_ok / max_ok: whether negatives / positives may appear */
    } c[] = {
        {"{\"type\":\"integer\",\"multipleOf\":7}", 7, 1, 1},
        {"{\"type\":\"number\",\"multipleOf\":5,\"minimum\":0}", 5, 0, 1},
        {"{\"type\":\"integer\",\"multipleOf\":12,\"maximum\":0}", 12, 1, 0},
        {"{\"allOf\":[{\"type\":\"integer\",\"multipleOf\":4},{\"multipleOf\":6}]}", 12, 1, 1},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct built b;
        ok(&b, c[i].schema);
        for (int v = -300; v <= 300; v++) {
            char t[16];
            snprintf(t, sizeof(t), "%d", v);
            int want = v % c[i].k == 0 && (v >= 0 || c[i].min_ok) && (v <= 0 || c[i].max_ok);
            cr_expect_eq(gir_match_str(&b.g, t), want, "%s on %s", c[i].schema, t);
        }
        YES("-0");
        NO("007", "1.0", "\"5\"");
        done(&b);
    }
    struct built b;
    ok(&b, "{\"enum\":[3,4,\"x\",9.0],\"multipleOf\":3}");
    YES("3", "\"x\"", "9.0");
    NO("4");
    done(&b);
    refused("{\"type\":\"integer\",\"multipleOf\":5,\"minimum\":1}", "multipleOf at /", "0 as the bound");
    refused("{\"type\":\"integer\",\"multipleOf\":1001}", "multipleOf at /", "up to 1000");
    refused("{\"allOf\":[{\"multipleOf\":999},{\"multipleOf\":998}]}", "multipleOf at /", "common multiple");
}

/* --- strings --------------------------------------------------------------------- */

Test(json_schema, string_lengths_count_characters)
{
    struct built b;
    ok(&b, "{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}");
    YES("\"ab\"", "\"abc\"", "\"\\n\\t\"", "\"\\u0041\\u0042\\u0043\"", "\"\\ud83d\\ude00\\ud83d\\ude00\"",
        "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", "\"\xc3\xa9\xc3\xa9\"", "\"a\\\"\"");
    NO("\"a\"", "\"abcd\"", "\"\\u0041\"", "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"",
       "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", "\"\\\\\\\\\\\\\\\\\"");
    done(&b);
    ok(&b, "{\"type\":\"string\",\"maxLength\":0}");
    YES("\"\"");
    NO("\"a\"");
    done(&b);
}

Test(json_schema, pattern)
{
    struct built b;
    ok(&b, "{\"type\":\"string\",\"pattern\":\"^ab+$\"}");
    YES("\"ab\"", "\"abbb\"", "\"\\u0061b\"");
    NO("\"a\"", "\"xab\"", "\"abx\"");
    done(&b);
    ok(&b, "{\"type\":\"string\",\"pattern\":\"b\"}");
    YES("\"b\"", "\"abc\"", "\"xxb\"");
    NO("\"ac\"", "\"\"");
    done(&b);
    refused("{\"pattern\":\"(?=a)\"}", "pattern at /", "lookaround");
    noted("{\"pattern\":\"(?=a)\"}", "pattern at /");
}

/* pattern with minLength / maxLength: every string of up to 4 characters, each written raw or
 * escaped (a surrogate pair is one character), against the pattern and the length counted by hand */
Test(json_schema, pattern_with_lengths)
{
    static const struct {
        const char *text;
        char ch; /* what the pattern sees: a, b, or x for any other character */
    } unit[] = {{"a", 'a'}, {"b", 'b'}, {"\\u0062", 'b'}, {"\xC3\xA9", 'x'}, {"\\ud83d\\ude00", 'x'}, {"\\n", 'x'}};
    static const struct {
        const char *schema;
        int anchored_ab_end_b, min, max; /* 1: ^[ab]*b$; 0: contains b */
    } c[] = {
        {"{\"type\":\"string\",\"pattern\":\"^[ab]*b$\",\"minLength\":2,\"maxLength\":3}", 1, 2, 3},
        {"{\"type\":\"string\",\"pattern\":\"b\",\"minLength\":3}", 0, 3, -1},
        {"{\"type\":\"string\",\"pattern\":\"b\",\"maxLength\":2}", 0, 0, 2},
    };
    const int n_units = (int)(sizeof(unit) / sizeof(unit[0]));
    for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
        struct built b;
        ok(&b, c[k].schema);
        for (int len = 0; len <= 4; len++) {
            int total = 1;
            for (int i = 0; i < len; i++)
                total *= n_units;
            for (int v = 0; v < total; v++) {
                char t[64] = "\"", seen[5] = {0};
                for (int i = 0, x = v; i < len; i++, x /= n_units) {
                    strcat(t, unit[x % n_units].text);
                    seen[i] = unit[x % n_units].ch;
                }
                strcat(t, "\"");
                int match;
                if (c[k].anchored_ab_end_b) {
                    match = len > 0 && seen[len - 1] == 'b' && !strchr(seen, 'x');
                } else {
                    match = strchr(seen, 'b') != NULL;
                }
                int want = match && len >= c[k].min && (c[k].max < 0 || len <= c[k].max);
                cr_expect_eq(gir_match_str(&b.g, t), want, "%s on %s", c[k].schema, t);
            }
        }
        done(&b);
    }
    refused("{\"type\":\"string\",\"pattern\":\"^a$\",\"minLength\":2}", "accepts nothing", "/");
}

Test(json_schema, formats)
{
    static const struct {
        const char *name;
        const char *yes[8], *no[8];
    } f[] = {
        {"date",
         {"2024-02-29", "2023-12-31", "0001-01-01", "2000-02-29"},
         {"2023-02-29", "1900-02-29", "0000-01-01", "2024-13-01", "2024-04-31", "24-01-01", "2024-1-01"}},
        {"time",
         {"23:59:59Z", "00:00:00.123+05:30", "12:00:00z", "01:02:03-00:00"},
         {"24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "12:00:00+5:00"}},
        {"date-time",
         {"2024-01-01T00:00:00Z", "2024-02-29t23:59:59.5-01:30"},
         {"2024-01-01 00:00:00Z", "2024-01-01T00:00:00", "2023-02-29T00:00:00Z"}},
        {"duration",
         {"P1D", "PT1H", "P1Y2M3DT4H5M6S", "P2W", "PT0S", "P1Y1D"},
         {"P", "PT", "P1DT", "1D", "P1H", "P1W1D", "PT1D", "P1S"}},
        {"email",
         {"a@b", "joe.bloggs@example.com", "x+y@sub.example-1.org"},
         {"ab", "@b", "a@", "a..b@c", ".a@b", "a@-b", "a b@c"}},
        {"uuid",
         {"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"},
         {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400",
          "g23e4567-e89b-12d3-a456-426614174000"}},
        {"ipv4",
         {"0.0.0.0", "255.255.255.255", "10.1.2.3"},
         {"256.0.0.0", "01.2.3.4", "1.2.3", "1.2.3.4.5", "a.b.c.d"}},
        {"ipv6",
         {"::", "::1", "1:2:3:4:5:6:7:8", "fe80::1", "::ffff:1.2.3.4", "1::", "1:2:3:4:5:6:7::"},
         {":", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1:2:3:4:5:6:7", "12345::", "::1.2.3.256",
          "1:2:3:4:5:6:7:1.2.3.4"}},
        {"hostname",
         {"a", "localhost", "example.com", "a-b.c.", "123.45"},
         {"", "-a", "a-", "a..b", "a_b.com", ".a"}},
        {"uri",
         {"http://example.com", "a:", "urn:isbn:0451450523", "https://u:p@[::1]:80/p/a?q=1#f",
          "mailto:x@y.z"},
         {"example.com", "/path", "1http://x", "http://x y", "http://x/%zz", "http://[::1/", ":x"}},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        char schema[128];
        snprintf(schema, sizeof(schema), "{\"type\":\"string\",\"format\":\"%s\"}", f[i].name);
        struct built b;
        ok(&b, schema);
        for (int k = 0; k < 8 && f[i].yes[k]; k++) {
            char t[128];
            snprintf(t, sizeof(t), "\"%s\"", f[i].yes[k]);
            cr_expect(gir_match_str(&b.g, t), "%s should accept %s", f[i].name, t);
        }
        for (int k = 0; k < 8 && f[i].no[k]; k++) {
            char t[128];
            snprintf(t, sizeof(t), "\"%s\"", f[i].no[k]);
            cr_expect(!gir_match_str(&b.g, t), "%s should reject %s", f[i].name, t);
        }
        cr_expect(!gir_match_str(&b.g, "1"), "%s is a string format", f[i].name);
        done(&b);
    }
    /* the 253 characters of a hostname: 4 labels of 63 are too long */
    char host[300], t[310];
    memset(host, 'a', 255);
    host[63] = host[127] = host[191] = '.';
    host[255] = '\0';
    snprintf(t, sizeof(t), "\"%s\"", host);
    struct built b;
    ok(&b, "{\"format\":\"hostname\"}");
    cr_expect(!gir_match_str(&b.g, t));
    host[191] = '\0';
    snprintf(t, sizeof(t), "\"%s\"", host);
    cr_expect(gir_match_str(&b.g, t));
    done(&b);
    /* a format applies to strings only, and a length bound it always meets is fine */
    ok(&b, "{\"format\":\"date\",\"maxLength\":10}");
    YES("\"2024-01-01\"", "12", "null");
    done(&b);
    /* so an unknown format on a schema typed without strings (OpenAPI's "float") constrains nothing,
     * and one that may meet a string is refused */
    ok(&b, "{\"type\":\"number\",\"format\":\"float\"}");
    YES("1.5", "-2");
    NO("\"1.5\"");
    done(&b);
    refused("{\"type\":[\"number\",\"string\"],\"format\":\"float\"}", "format", "unknown format 'float'");
    refused("{\"format\":\"float\"}", "format", "unknown format 'float'");
}

/* --- $ref ------------------------------------------------------------------------- */

Test(json_schema, ref_recursion_tree)
{
    struct built b;
    ok(&b, "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
           "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"],"
           "\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}");
    YES("{\"v\":1}", "{\"v\":1,\"kids\":[]}",
        "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[{\"v\":4,\"kids\":[]}]}]}");
    NO("{\"v\":1,\"kids\":[{}]}", "{\"kids\":[]}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":\"x\"}]}]}");
    int refs_to_node = 0;
    for (int r = 0; r < b.g.n_rules; r++)
        refs_to_node += strstr(b.g.rules[r].name, "node") != NULL;
    cr_expect_eq(refs_to_node, 1, "the $ref target is built once (%d rules named for it)", refs_to_node);
    done(&b);
    /* the root, a linked list */
    ok(&b, "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"additionalProperties\":false}");
    YES("{}", "{\"next\":{}}", "{\"next\":{\"next\":{\"next\":{}}}}");
    NO("{\"next\":1}");
    done(&b);
}

Test(json_schema, ref_pointers)
{
    struct built b;
    ok(&b, "{\"properties\":{\"a/"
           "b\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},\"c~d\":{\"type\":\"string\"},"
           "\"x\":{\"$ref\":\"#/properties/a~1b/items\"},\"y\":{\"$ref\":\"#/properties/c~0d\"},"
           "\"z\":{\"$ref\":\"#/definitions/p%25q\"},\"w\":{\"$ref\":\"#/prefixItems/0\"},"
           "\"v\":{\"$ref\":\"#here\"}},\"definitions\":{\"p%q\":{\"type\":\"null\"}},"
           "\"prefixItems\":[{\"type\":\"boolean\"}],\"$defs\":{\"h\":{\"$anchor\":\"here\",\"const\":7}},"
           "\"additionalProperties\":false}");
    YES("{\"x\":1}", "{\"y\":\"s\"}", "{\"z\":null}", "{\"w\":true}", "{\"v\":7}");
    NO("{\"x\":\"s\"}", "{\"y\":1}", "{\"z\":1}", "{\"w\":1}", "{\"v\":8}");
    done(&b);
    ok(&b, "{\"$id\":\"https://example.com/s.json\",\"properties\":{\"a\":{\"$ref\":\"https://example.com/"
           "s.json#/$defs/i\"}},"
           "\"$defs\":{\"i\":{\"type\":\"integer\"}}}");
    YES("{\"a\":1}");
    NO("{\"a\":\"x\"}");
    done(&b);
    /* $ref with siblings: both apply */
    ok(&b, "{\"$defs\":{\"o\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{}}}},"
           "\"$ref\":\"#/$defs/o\",\"required\":[\"b\"],\"properties\":{\"a\":{\"minimum\":3}}}");
    YES("{\"b\":1}", "{\"a\":3,\"b\":null}");
    NO("{\"a\":2,\"b\":1}", "{\"a\":3}", "[]");
    done(&b);
}

/* --- anyOf / oneOf / allOf --------------------------------------------------------- */

Test(json_schema, any_of)
{
    struct built b;
    ok(&b, "{\"anyOf\":[{\"type\":\"string\",\"maxLength\":1},{\"type\":\"integer\",\"minimum\":10}]}");
    YES("\"a\"", "\"\"", "10", "99");
    NO("\"ab\"", "9", "null");
    done(&b);
    /* siblings apply to every alternative */
    ok(&b, "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false,"
           "\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}");
    YES("{\"a\":1}", "{\"b\":1}", "{\"a\":1,\"b\":2}");
    NO("{}", "{\"c\":1}");
    done(&b);
}

Test(json_schema, one_of_proved)
{
    struct built b;
    /* a discriminator */
    ok(&b, "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},\"x\":{\"type\":"
           "\"integer\"}},"
           "\"required\":[\"kind\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"enum\":[\"b\",\"c\"]},"
           "\"y\":{\"type\":\"string\"}},\"required\":[\"kind\"]}]}");
    YES("{\"kind\":\"a\",\"x\":1}", "{\"kind\":\"b\",\"y\":\"s\"}", "{\"kind\":\"c\"}");
    NO("{\"kind\":\"d\"}", "{\"kind\":\"a\",\"x\":\"s\"}", "{}");
    done(&b);
    /* disjoint types, disjoint ranges, disjoint enums */
    ok(&b, "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"maximum\":0},{\"type\":\"number\","
           "\"exclusiveMinimum\":0},{\"enum\":[null,true]},{\"const\":false}]}");
    YES("\"s\"", "-3", "0", "0.5", "7", "null", "true", "false");
    NO("[]", "{}");
    done(&b);
    refused("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "oneOf at /", "cannot prove");
    refused("{\"properties\":{\"p\":{\"oneOf\":[{\"minimum\":0},{\"maximum\":5}]}}}",
            "oneOf at /properties/p", "cannot prove the alternatives exclusive");
    noted("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "oneOf at /");
    /* not strict: read as anyOf */
    struct err e = {{0}};
    cr_assert(build(&b,
                    "{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"minLength\":2},{\"type\":"
                    "\"number\"}]}",
                    0, -1, &e) == 0,
              "%s", e.msg);
    YES("1", "1.5", "\"ab\"");
    NO("\"a\"");
    done(&b);
}

Test(json_schema, one_of_many_alternatives)
{
    /* a discriminated union of 200 variants and a oneOf of 500 consts: proved without the pairs */
    char *s = malloc(200 * 160 + 64);
    strcpy(s, "{\"oneOf\":[");
    for (int i = 0; i < 200; i++)
        sprintf(s + strlen(s),
                "%s{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"k%d\"},\"v%d\":{\"type\":"
                "\"integer\"}},"
                "\"required\":[\"kind\"],\"additionalProperties\":false}",
                i ? "," : "", i, i);
    strcat(s, "]}");
    struct built b;
    ok(&b, s);
    YES("{\"kind\":\"k0\"}", "{\"kind\":\"k199\",\"v199\":3}");
    NO("{\"kind\":\"k1\",\"v2\":3}", "{\"kind\":\"k200\"}");
    done(&b);
    strcpy(s, "{\"oneOf\":[");
    for (int i = 0; i < 500; i++)
        sprintf(s + strlen(s), "%s{\"const\":%d}", i ? "," : "", i);
    strcat(s, "]}");
    ok(&b, s);
    YES("0", "499", "7.0");
    NO("500", "-1");
    done(&b);
    /* the same consts twice: the alternatives meet */
    s[strlen(s) - 2] = '\0';
    strcat(s, ",{\"enum\":[3,4]}]}");
    refused(s, "oneOf at /", "cannot prove");
    free(s);
    /* required alone says nothing of non-objects: "x" would match every variant */
    refused("{\"oneOf\":[{\"properties\":{\"k\":{\"const\":1}},\"required\":[\"k\"]},"
            "{\"properties\":{\"k\":{\"const\":2}},\"required\":[\"k\"]},"
            "{\"properties\":{\"k\":{\"const\":3}},\"required\":[\"k\"]}]}",
            "oneOf at /", NULL);
}

Test(json_schema, hostile_schemas_fail_fast)
{
    /* six anyOfs of ten alternatives intersected: a million combinations */
    char *s = malloc(6 * 10 * 64 + 64);
    strcpy(s, "{\"allOf\":[");
    for (int k = 0; k < 6; k++) {
        strcat(s, k ? ",{\"anyOf\":[" : "{\"anyOf\":[");
        for (int i = 0; i < 10; i++)
            sprintf(s + strlen(s), "%s{\"properties\":{\"p%d\":{\"type\":\"integer\"}}}", i ? "," : "", i);
        strcat(s, "]}");
    }
    strcat(s, "]}");
    struct built b;
    struct err e = {{0}};
    cr_expect(build(&b, s, 1, -1, &e) < 0, "a million combinations should be refused");
    cr_expect(strstr(e.msg, "more than 4096"), "%s", e.msg);
    done(&b);
    free(s);
}

Test(json_schema, all_of_merged)
{
    struct built b;
    ok(&b, "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0}},"
           "\"required\":[\"a\"]},{\"properties\":{\"a\":{\"maximum\":10},\"b\":{\"type\":\"string\"}},"
           "\"required\":[\"b\"]}]}");
    YES("{\"a\":0,\"b\":\"x\"}", "{\"a\":10,\"b\":\"\",\"c\":1}");
    NO("{\"a\":11,\"b\":\"x\"}", "{\"a\":-1,\"b\":\"x\"}", "{\"a\":1}", "{\"b\":\"x\"}", "{\"a\":1,\"b\":2}");
    done(&b);
    /* additionalProperties false in one member forbids what only another lists */
    ok(&b, "{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{\"properties\":{\"b\":{}}"
           "}]}");
    YES("{}", "{\"a\":1}");
    NO("{\"b\":1}", "{\"a\":1,\"b\":1}");
    done(&b);
    /* types intersected, bounds tightened */
    ok(&b, "{\"allOf\":[{\"type\":[\"integer\",\"string\"]},{\"type\":[\"number\",\"null\"]},{\"minimum\":2},"
           "{\"exclusiveMaximum\":5}]}");
    YES("2", "4");
    NO("1", "5", "\"s\"", "null", "2.5");
    done(&b);
    ok(&b, "{\"allOf\":[{\"minLength\":2},{\"maxLength\":3},{\"type\":\"string\"}]}");
    YES("\"ab\"", "\"abc\"");
    NO("\"a\"", "\"abcd\"");
    done(&b);
    ok(&b,
       "{\"allOf\":[{\"items\":{\"type\":\"integer\"}},{\"prefixItems\":[{\"minimum\":5}],\"maxItems\":2}]}");
    YES("[]", "[5]", "[5,1]");
    NO("[4]", "[5,1,2]", "[5,\"x\"]");
    done(&b);
    refused("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "accepts nothing", NULL);
    refused("{\"allOf\":[{\"pattern\":\"a\"},{\"pattern\":\"b\"}]}", "pattern at /allOf/1", "intersect");
}

/* --- errors and notes ---------------------------------------------------------------- */

Test(json_schema, errors_name_keyword_and_path)
{
    refused("{\"type\":\"object\",\"properties\":{\"a\":{\"patternProperties\":{}}}}",
            "unsupported keyword 'patternProperties' at /properties/a", NULL);
    refused("{\"items\":{\"$ref\":\"#/$defs/x\"}}", "'$ref' at /items: '#/$defs/x' is not defined", NULL);
    refused("{\"$ref\":\"other.json#/a\"}", "remote reference", "other.json");
    refused("false", "schema at / accepts nothing", NULL);
    refused(
        "{\"properties\":{\"a\":{\"properties\":{\"b\":false},\"required\":[\"b\"]}},\"required\":[\"a\"]}",
        "schema at /properties/a/properties/b accepts nothing", NULL);
    refused("{\"required\":[\"x\"],\"additionalProperties\":false}", "'x'", "/required");
    refused("{\"properties\":{\"a\":{\"type\":\"strin\"}}}", "unknown type 'strin'", "/properties/a");
    refused("{\"minLength\":-1}", "'minLength' at /", "non-negative");
    refused("{\"format\":\"bogus\"}", "format at /", "'bogus'");
    refused("{\"type\":\"array\",\"maxItems\":1000000000}", "maxItems at /", "1000000000");
    refused("{\"type\":\"string\",\"maxLength\":100000000}", "maxLength at /", NULL);
    refused("{\"type\":\"string\",\"pattern\":\"(?=a)\",\"minLength\":3}", "pattern at /",
            "pattern");
    refused("{\"type\":\"number\",\"multipleOf\":0.5}", "multipleOf at /", NULL);
    refused("{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems at /", NULL);
    refused("{\"contains\":{}}", "unsupported keyword 'contains' at /", NULL);
    refused("{\"not\":{}}", "unsupported keyword 'not'", NULL);
    refused("{\"if\":{},\"then\":{}}", "unsupported keyword 'if'", NULL);
    refused("{\"properties\":{\"x\":{\"propertyNames\":{}}}}", "'propertyNames' at /properties/x", NULL);
    refused("{\"dependentRequired\":{}}", "dependentRequired", NULL);
    refused("{\"unevaluatedProperties\":false}", "unevaluatedProperties", NULL);
    refused("{\"type\":\"object\",\"minProperties\":1}", "minProperties at /", NULL);
    refused(
        "{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
        "circular", NULL);
    refused("{\"anyOf\":[]}", "'anyOf' at /", NULL);
    refused("{\"properties\":{\"a\":1}}", "/properties/a", NULL);
    refused("[1]", "schema at /", NULL);
    refused("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":3,\"maximum\":1}},"
            "\"required\":[\"a\"]}",
            "/properties/a accepts nothing", NULL);
    /* a schema nested past the limit, and allOf nested past it, are errors, not hangs */
    char *deep = malloc(300 * 20 + 10);
    deep[0] = '\0';
    for (int i = 0; i < 300; i++)
        strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 300; i++)
        strcat(deep, "}");
    refused(deep, "nested", NULL);
    deep[0] = '\0';
    for (int i = 0; i < 300; i++)
        strcat(deep, "{\"allOf\":[");
    strcat(deep, "{}");
    for (int i = 0; i < 300; i++)
        strcat(deep, "]}");
    refused(deep, "more than", NULL);
    free(deep);
    /* a JSON syntax error names line and column */
    struct built b;
    struct err e = {{0}};
    cr_assert(build(&b, "{\n  \"type\": }", 1, -1, &e) < 0);
    cr_expect(strstr(e.msg, "2:"), "%s", e.msg);
    done(&b);
}

/* an unknown keyword asserts nothing: ignored even when strict, but noted */
Test(json_schema, unknown_keywords_are_noted_annotations)
{
    struct built b;
    struct err e = {{0}};
    cr_assert(build(&b, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"optional\":true}}}", 1,
                    -1, &e) == 0,
              "%s", e.msg);
    YES("{\"a\":1}", "{}");
    NO("{\"a\":\"x\"}");
    cr_assert_eq(b.notes.n_ignored, 1);
    cr_expect(strstr(b.notes.ignored[0], "optional at /properties/a (unknown keyword"), "%s", b.notes.ignored[0]);
    done(&b);
    /* inside a oneOf's proof it changes nothing either */
    ok(&b, "{\"oneOf\":[{\"type\":\"string\",\"x-note\":1},{\"type\":\"integer\"}]}");
    YES("\"s\"", "1");
    done(&b);
}

Test(json_schema, not_strict_notes)
{
    noted("{\"type\":\"object\",\"properties\":{\"a\":{\"patternProperties\":{}}}}",
          "patternProperties at /properties/a");
    noted("{\"foo\":1}", "foo at /");
    noted("{\"format\":\"bogus\"}", "format at /");
    noted("{\"type\":\"number\",\"multipleOf\":0.5}", "multipleOf at /");
    noted("{\"type\":\"string\",\"pattern\":\"(?=a)\",\"maxLength\":3}", "pattern at /");
    noted("{\"contains\":{\"type\":\"integer\"}}", "contains at /");
    /* what was ignored no longer constrains */
    struct built b;
    struct err e = {{0}};
    cr_assert(build(&b, "{\"type\":\"number\",\"multipleOf\":0.5,\"bogus\":2}", 0, -1, &e) == 0, "%s", e.msg);
    YES("0.3", "1");
    cr_expect_eq(b.notes.n_ignored, 2);
    done(&b);
    /* a keyword seen twice is noted once */
    cr_assert(build(&b, "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"foo\":1}", 0, -1, &e) ==
                  0,
              "%s", e.msg);
    cr_expect_eq(b.notes.n_ignored, 1);
    done(&b);
}

/* --- whitespace ------------------------------------------------------------------------- */

Test(json_schema, whitespace)
{
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
        "\"additionalProperties\":{\"type\":\"object\"}}";
    struct built b;
    ok(&b, schema);
    YES("{\"a\":[1,2]}", "{\"a\":[],\"b\":{}}");
    NO(" {\"a\":[1,2]}", "{\"a\":[1,2]} ", "{\"a\": [1,2]}", "{\"a\":[1, 2]}", "{ }", "[ ]", "{\"a\":[ ]}");
    done(&b);
    ok_ws(&b, schema, 2);
    YES("{\"a\":[1,2]}", "  {  \"a\"  :  [  1  ,  2  ]  ,  \"b\"  :  {  }  }  ", "\t{\n\"a\"\r:[1,2]}\n\n",
        "{  }", "{\"a\":[  ]}");
    NO("   {\"a\":[1,2]}", "{\"a\":[1,2]}   ", "{   \"a\":[1,2]}", "{\"a\"   :[1,2]}", "{\"a\":   [1,2]}",
       "{\"a\":[   1,2]}", "{\"a\":[1   ,2]}", "{\"a\":[1,   2]}", "{\"a\":[1,2   ]}", "{\"a\":[1,2]   }",
       "{   }", "{\"a\":[1,2],\"b\":{   }}", "{\"a\":[1,2]\f}");
    done(&b);
    ok_ws(&b, schema, 0);
    NO(" {}");
    done(&b);
    struct err e = {{0}};
    cr_expect(build(&b, "{}", 1, 1 << 20, &e) < 0 && strstr(e.msg, "ws_max"), "%s", e.msg);
    done(&b);
    /* lines: what json.dumps writes, compact, with ", " or indented; no blank lines, nothing around */
    gir_init(&b.g);
    memset(&b.notes, 0, sizeof(b.notes));
    struct json_schema_opts lines = {1, 4, 1};
    cr_assert(json_schema_from_text(schema, strlen(schema), &lines, &b.notes, &b.g, &e) == 0, "%s", e.msg);
    YES("{\"a\":[1,2]}", "{\"a\": [1, 2], \"b\": {}}", "{\n  \"a\": [\n    1,\n    2\n  ]\n}",
        "{\r\n\t\"a\":[]}", "{ }", "{\"a\" : [ 1 , 2 ] }");
    NO(" {\"a\":[1,2]}", "{\"a\":[1,2]} ", "{\"a\":[1,2]}\n", "{\n\n\"a\":[]}", "{  \"a\":[]}",
       "{ \n\"a\":[]}", "{\n     \"a\":[]}", "{\"a\":[1,\t2]}");
    done(&b);
}
