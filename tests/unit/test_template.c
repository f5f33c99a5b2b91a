/* The chat-template interpreter: every construct, filter, test and method
 * chat templates use, jinja2's whitespace control and undefined semantics,
 * Python printing (str/repr/json.dumps), errors that name the template line,
 * and the chat_template layer (template selection, special tokens, message
 * preprocessing). Expected strings come from jinja2 3.1 as transformers
 * configures it (tests/parity checks the same against transformers). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <string.h>

#include "chat/chat_template.h"
#include "template/template.h"
#include "tok_fixture.h"

#define VARS                                                                                                 \
    "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": "     \
    "\"yo\"}],"                                                                                              \
    " \"d\": {\"a\": 1, \"items\": 2, \"keys\": 3}, \"xs\": [1, 2, 3], \"s\": \"Hello World\", \"n\": null," \
    " \"f\": 1.5, \"nested\": {\"x\": {\"y\": [1, {\"z\": \"deep\"}]}}}"

/* Renders src with vars (JSON text); returns malloc'ed output or NULL with e set. */
static char *render(const char *src, const char *vars, struct err *e)
{
    struct tmpl *t = tmpl_compile(src, strlen(src), e);
    if (!t)
        return NULL;
    json_error_t je;
    json_t *v = json_loads(vars ? vars : VARS, 0, &je);
    cr_assert(v, "bad test vars: %s", je.text);
    char *out = NULL;
    size_t len = 0;
    int rc = tmpl_render(t, v, &out, &len, e);
    json_decref(v);
    tmpl_free(t);
    if (rc)
        return NULL;
    cr_assert_eq(strlen(out), len);
    return out;
}

static void expect(const char *src, const char *want)
{
    struct err e = {{0}};
    char *out = render(src, NULL, &e);
    cr_assert(out, "template %s failed: %s", src, e.msg);
    cr_expect_str_eq(out, want, "template: %s\n   got: %s\n  want: %s", src, out, want);
    free(out);
}

/* Fails (at compile or render time) with a message containing want. */
static void expect_error(const char *src, const char *want)
{
    struct err e = {{0}};
    char *out = render(src, NULL, &e);
    cr_assert_null(out, "template %s rendered '%s', expected an error", src, out ? out : "");
    cr_expect(strstr(e.msg, want), "template %s: error '%s' lacks '%s'", src, e.msg, want);
}

/* ------------------------------------------------------------ whitespace */

Test(template_ws, trim_and_lstrip_blocks)
{
    expect("{% if true %}\n  yes\n{% endif %}\n", "  yes\n");
    expect("  {% if true %}\n  yes\n  {% endif %}\nend", "  yes\nend");
    expect("x {% if true %}y{% endif %}", "x y");
    expect("a\n  {# c #}\nb", "a\nb");
    expect("{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", "  1\n  2\n");
}

Test(template_ws, minus_and_plus)
{
    expect("a  \n  {%- if true %}b{% endif %}", "ab");
    expect("{% if true -%}  \n  b{% endif %}", "b");
    expect("a  {{- 'b' -}}  \n c", "abc");
    expect("  {%+ if true %}x{% endif %}", "  x");
    expect("{% if true +%}\nx{% endif %}", "\nx");
    expect("a\n  {#- c -#}\n  b", "ab");
    expect("{%- for m in messages -%}\n  {{ m.role }}\n{%- endfor -%}\n", "userassistant");
}

Test(template_ws, raw_newlines_and_trailing_newline)
{
    expect("{% raw %}{{ x }} {% if %}{% endraw %}", "{{ x }} {% if %}");
    expect("a\r\nb\rc\n", "a\nb\nc");
    expect("a\n\n", "a\n");
    expect("{{ 'x\ny' }}", "x\ny");
    expect("{{ {'a': {'b': 1}} }}", "{'a': {'b': 1}}");
}

/* ------------------------------------------------------------ literals */

Test(template_expr, literals_and_printing)
{
    expect("{{ 'multi' 'part' \"s\" }}{{ 1_000 }}{{ 0x1F }}{{ 0o17 }}{{ 0b101 }}{{ 1.5e3 }}{{ 1E-2 }}",
           "multiparts1000311551500.00.01");
    expect("{{ True }}{{ false }}{{ none }}{{ None }}", "TrueFalseNoneNone");
    expect("{{ [1, 'a', \"it's\", none, true, 1.5, {'k': 'v'}] }}",
           "[1, 'a', \"it's\", None, True, 1.5, {'k': 'v'}]");
    expect("{{ (1,) }}{{ () }}{{ ('a', 'b') }}{{ [1, 2,] }}{{ {'a': 1,} }}",
           "(1,)()('a', 'b')[1, 2]{'a': 1}");
    expect("{{ '\\t|\\x41|\\u00e9|\\101|\\\\|\\'|\\q' }}", "\t|A|é|A|\\|'|\\q");
    expect("{{ ['a\\nb', 'c\"d', \"e'f\", 'g\\\\h', 'é', '\\x00\\x7f\\u200b'] }}",
           "['a\\nb', 'c\"d', \"e'f\", 'g\\\\h', 'é', '\\x00\\x7f\\u200b']");
}

Test(template_expr, floats_print_like_python)
{
    expect("{{ 0.1 + 0.2 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ -0.0 }}|{{ 3.0 }}|{{ 1e300 * "
           "1e10 }}",
           "0.30000000000000004|1e+16|1000000000000000.0|0.0001|1e-05|-0.0|3.0|inf");
    expect("{{ 123456789.123456789 }}|{{ 2.5e-7 }}|{{ 1.5e300 }}", "123456789.12345679|2.5e-07|1.5e+300");
}

Test(template_expr, arithmetic)
{
    expect("{{ -2**2 }}|{{ 2**-1 }}|{{ 2 ** 10 }}|{{ 7//-2 }}|{{ -7 % 3 }}|{{ 7/2 }}|{{ 6/2 }}|{{ 10.5 // 3 "
           "}}|{{ 5.5 % 2 }}",
           "4|0.5|1024|-4|2|3.5|3.0|3.0|1.5");
    expect("{{ 10 - 2 - 3 }}|{{ 2 * 3 + 4 }}|{{ 1 + 2.0 }}|{{ true + true }}|{{ -7.5 % 2 }}|{{ 7 // -2.0 }}",
           "5|10|3.0|2|0.5|-4.0");
    expect("{{ 'a' * 3 }}|{{ [1] * 2 }}|{{ 3 * 'b' }}|{{ 'ab' * -1 }}|{{ [1] + [2] }}|{{ (1,) + (2,) }}",
           "aaa|[1, 1]|bbb||[1, 2]|(1, 2)");
    expect("{{ 'x' ~ 1 ~ none ~ foo ~ [1] }}", "x1None[1]");
    expect("{{ '%s=%d' % ('a', 5) }}|{{ '%5.1f|%-3s|%03d|%x' % (3.14159, 'a', 7, 255) }}|{{ '%(k)s' % {'k': "
           "1} }}",
           "a=5|  3.1|a  |007|ff|1");
    expect_error("{{ 1 / 0 }}", "division by zero");
    expect_error("{{ 5 // 0 }}", "modulo by zero");
    expect_error("{{ 'x' + 1 }}", "can only concatenate str");
    expect_error("{{ [1] + (2,) }}", "can only concatenate list");
    /* deliberate difference: integers are 64-bit here, Python's are unbounded */
    expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow");
    expect_error("{{ -'a' }}", "bad operand type");
}

Test(template_expr, comparisons_and_logic)
{
    expect("{{ 1 < 2 < 3 }}{{ 1 < 2 > 5 }}{{ true == 1 }}{{ 1 == 1.0 }}{{ 'a' < 'b' }}{{ [1,2] < [1,3] }}{{ "
           "(2,) > (1,5) }}",
           "TrueFalseTrueTrueTrueTrueTrue");
    expect("{{ [1,2] == (1,2) }}{{ {'a':1} == {'a':1} }}{{ none == none }}{{ foo == foo }}{{ foo == none }}",
           "FalseTrueTrueTrueFalse");
    expect(
        "{{ 'a' == 'a' and 'b' }}{{ 0 or 'x' }}{{ '' or none }}{{ 1 and 0 }}{{ [] or 'y' }}{{ not 1 == 2 }}",
        "bxNone0yTrue");
    expect("{{ 'a' in 'cat' }}{{ 1 in [1, 2] }}{{ 'a' in {'a': 1} }}{{ 3 not in [1] }}{{ 'z' in foo }}{{ '' "
           "in 'x' }}",
           "TrueTrueTrueTrueFalseTrue");
    expect("{{ 1 if true }}{{ 2 if false else 3 }}{{ 4 if none else 5 if true else 6 }}[{{ 1 if false }}]",
           "135[]");
    expect_error("{{ 'a' < 1 }}", "not supported between instances of 'str' and 'int'");
    expect_error("{{ 1 in 'abc' }}", "requires string as left operand");
    expect_error("{{ none in none }}", "not iterable");
}

Test(template_expr, access_and_slicing)
{
    expect(
        "{{ messages[0].role }}{{ messages[1]['content'] }}{{ messages.0.role }}{{ messages[-1].content }}",
        "useryouseryo");
    expect("{{ nested.x.y.1.z }}{{ d['keys'] }}{{ d.zz }}|{{ xs[5] }}|{{ 'abc'[1] }}{{ 'abc'[-1] }}",
           "deep3||bc");
    expect("{{ xs[1:] }}{{ xs[::-1] }}{{ xs[-1:] }}{{ xs[:-1] }}{{ xs[::2] }}{{ xs[5:] }}{{ xs[none:2] }}",
           "[2, 3][3, 2, 1][3][1, 2][1, 3][][1, 2]");
    expect("{{ 'héllo'[1:3] }}{{ s[::-1] }}{{ s[1:-1:3] }}{{ (1, 2, 3)[1:] }}{{ range(10)[2:5] }}",
           "éldlroW olleHeoo(2, 3)range(2, 5)");
    expect_error("{{ xs[::0] }}", "slice step cannot be zero");
    expect_error("{{ n[1:] }}", "not subscriptable");
}

/* ------------------------------------------------------------ undefined */

Test(template_undefined, like_jinja2_default_undefined)
{
    expect("[{{ foo }}]{{ foo is defined }}{{ foo is undefined }}{{ foo|length }}{{ foo|default('x') }}",
           "[]FalseTrue0x");
    expect("{% for x in foo %}a{% else %}empty{% endfor %}{% if not foo %}falsy{% endif %}{{ foo|list }}",
           "emptyfalsy[]");
    expect("{{ messages[5] is defined }}{{ d.missing is defined }}{{ foo|string }}|{{ [foo] }}",
           "FalseFalse|[Undefined]");
    expect_error("{{ foo.bar }}", "'foo' is undefined");
    expect_error("{{ foo['bar'] }}", "'foo' is undefined");
    expect_error("{{ d.missing.y }}", "'dict object' has no attribute 'missing'");
    expect_error("{{ messages[5].role }}", "list object has no element 5");
    expect_error("{{ foo + 'x' }}", "'foo' is undefined");
    expect_error("{{ foo() }}", "'foo' is undefined");
    expect_error("{{ foo|tojson }}", "Object of type Undefined is not JSON serializable");
    expect_error("{{ foo < 1 }}", "undefined");
    expect_error("{{ (1 if false).x }}", "evaluated to false and no else section");
}

/* ------------------------------------------------------------ statements */

Test(template_stmt, if_elif_else)
{
    expect("{% if n %}a{% elif f > 1 %}b{% else %}c{% endif %}", "b");
    expect("{% if false %}a{% elif false %}b{% else %}c{% endif %}", "c");
}

Test(template_stmt, for_loops)
{
    expect("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
           "{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
           "1021TrueFalse2|2110FalseTrue2|");
    expect("{% for x in xs %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a', 'b') }}|{% endfor %}",
           "-2-a|1-3-b|2--a|");
    expect("{% for a in xs if a > 1 %}{{ loop.index }}/{{ loop.length }}{{ loop.last }},{% endfor %}",
           "1/2False,2/2True,");
    expect("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for a, b in [[1, 2], 'xy'] %}{{ a }}{{ "
           "b }}{% endfor %}",
           "a=1,items=2,keys=3,12xy");
    expect("{% for c in 'héllo' %}{{ c }}.{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
           "h.é.l.l.o.aitemskeys");
    expect("{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"
           "{% for x in xs %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
           "131");
    expect("{% for i in [1,2] %}{% set outer = loop %}{% for j in [3,4] %}{{ outer.index }}{{ loop.index "
           "}}{% endfor %}{% endfor %}",
           "11122122");
    expect("{% for i in range(4) %}{% if loop.changed(i // 2) %}c{% endif %}{{ i }}{% endfor %}", "c01c23");
    expect("{% for x in [] %}x{% else %}empty{% endfor %}", "empty");
    expect_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}", "too many values to unpack");
    expect_error("{% for x in none %}{% endfor %}", "'NoneType' object is not iterable");
    expect_error("{% break %}", "'break' outside loop");
}

Test(template_stmt, set_and_scoping)
{
    expect("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "12121");
    expect("{% for i in [1,2] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}", "[1][]");
    expect("{% if true %}{% set z = 'if' %}{% endif %}{{ z }}", "if");
    expect("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set messages = messages[1:] %}{{ messages|length }}",
           "121");
    expect("{% set x %}  hi {{ 1 + 1 }} {% endset %}[{{ x }}]{% set y | upper | trim %} abc {% endset %}[{{ "
           "y }}]",
           "[  hi 2 ][ABC]");
    expect("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", "3[]");
}

Test(template_stmt, namespaces)
{
    expect(
        "{% set ns = namespace(count=0, items=[]) %}{% for m in messages %}{% set ns.count = ns.count + 1 %}"
        "{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.count }}{{ ns.items }}{{ ns.missing }}|{{ "
        "ns }}",
        "2['user', 'assistant']|<Namespace {'count': 2, 'items': ['user', 'assistant']}>");
    expect("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}", "121");
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", "non-namespace");
    expect_error("{% set ns = namespace() %}{% set ns._x = 1 %}", "underscore-prefixed");
}

Test(template_stmt, macros_and_blocks)
{
    expect("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m('A') }}{{ m('A', c=1) "
           "}}{{ m(b=2, a=1) }}{{ m() }}",
           "ABNoneAB112NoneBNone");
    expect("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}{% for x in [5] %}{{ "
           "m() }}{% endfor %}",
           "22");
    expect("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
           "1(2,){'k': 3}");
    expect("{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
           "321");
    expect("{% macro m(a, b=a) %}{{ b }}{% endmacro %}{{ m(7) }}", "7");
    expect("{% macro outer(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(v) outer(4) %}got {{ v }}{% "
           "endcall %}",
           "[got 8]");
    expect("{% filter upper %}hello {{ 'x' }}{% endfilter %}{% filter replace('a', 'b')|title %}aaa a{% "
           "endfilter %}",
           "HELLO XBbb B");
    expect("{% generation %}gen{% endgeneration %}{% print 'p', 1 %}", "genp1");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "takes not more than 1 argument");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, x=2) }}", "no keyword argument 'x'");
    expect_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "recursion");
}

Test(template_stmt, raise_exception_gives_the_message)
{
    struct err e = {{0}};
    char *out =
        render("line one\n{{ raise_exception('Conversation roles must alternate: ' ~ 2) }}", NULL, &e);
    cr_assert_null(out);
    cr_assert_str_eq(e.msg, "Conversation roles must alternate: 2");
}

Test(template_stmt, strftime_now_and_globals)
{
    expect("{{ strftime_now('%Y')|length }}{{ range(3)|list }}{{ range(1, 10, 4)|list }}{{ range(3) }}{{ "
           "dict(a=1) }}",
           "4[0, 1, 2][1, 5, 9]range(0, 3){'a': 1}");
    expect_error("{{ range(200000)|length }}", "Range too big");
}

/* ---------------------------------------------------------------- errors */

Test(template_errors, name_the_line)
{
    expect_error("line 1\nline 2\n{{ x | frobnicate }}", "template line 3: unknown filter 'frobnicate'");
    expect_error("a\n{% if x is frobnicated %}{% endif %}", "template line 2: unknown test 'frobnicated'");
    expect_error("a\n\n{% if true %}",
                 "template line 3: unexpected end of template, expected 'elif' or 'else' or 'endif'");
    expect_error("{% endfor %}", "template line 1: Encountered unknown tag 'endfor'");
    expect_error("{% include 'x' %}", "not supported");
    expect_error("{{ 1 + }}", "template line 1: unexpected");
    expect_error("{{ (1 }}", "unexpected '}'");
    expect_error("{{ 'unterminated }}", "unexpected char");
    expect_error("{# never closed", "missing end of comment tag");
    expect_error("a\nb\n{{ xs.append(4) }}",
                 "template line 3: access to attribute 'append' of 'list' object is unsafe");
    expect_error("\n\n\n\n{{ 1 + 'a' }}", "template line 5:");
    /* widths that would pad to gigabytes (found by make fuzz) */
    expect_error("{{ '%3333333333333333333s' % 1 }}", "format width or precision too large");
    expect_error("{{ '%.99999999999s' % 'a' }}", "format width or precision too large");
    expect_error("{{ '{:99999999999}'.format(1) }}", "Invalid format specifier");
    expect_error("{{ 'a'.center(99999999) }}", "width too large");
    expect("{{ '%5s|%.2s' % ('ab', 'xyz') }}{{ '{:>4}'.format(7) }}", "   ab|xy   7");
    expect("{{ '%5c|%-4s|%04d|%+5.1f' % ('x', 'ab', 7, 2.25) }}", "    x|ab  |0007| +2.2");
    /* a namespace holding itself prints as Python prints it (found by make fuzz: the stack overflowed) */
    expect("{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns.n }}|{{ ns }}",
           "<Namespace {'n': <Namespace {...}>}>|<Namespace {'n': <Namespace {...}>}>");
    expect("{% set ns = namespace(n=0) %}{% set ns.n = [ns] %}{{ ns.n }}", "[<Namespace {'n': [...]}>]");
}

/* --------------------------------------------------------------- filters */

Test(template_filters, strings)
{
    expect("{{ '  a  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ none|trim }}|{{ 5|trim }}", "a|a|None|5");
    expect("{{ 'hello world'|upper }}{{ 'ABC'|lower }}{{ 'hello wORLD'|capitalize }}{{ \"they're bill's "
           "(x)-y\"|title }}",
           "HELLO WORLDabcHello worldThey're Bill's (X)-Y");
    expect("{{ 'é'|upper }}{{ 'ß'|upper }}{{ 'ÀÉÎ'|lower }}{{ 'привет'|upper }}", "ÉSSàéîПРИВЕТ");
    expect("{{ 'aaa'|replace('a', 'b', 2) }}{{ 'ab'|replace('', '-') }}{{ 42|string }}{{ 'x'|safe }}",
           "bba-a-b-42x");
    expect("{{ 'a<b>&\"\\''|e }}{{ 'a b  c\\nd'|wordcount }}{{ 'x'|center(5) }}|{{ '%s-%s'|format(1, 2) }}",
           "a&lt;b&gt;&amp;&#34;&#39;4  x  |1-2");
    expect("{{ 'hello world foo bar'|truncate(9) }}|{{ 'hello world foo bar'|truncate(9, true) }}|"
           "{{ 'short'|truncate(3) }}",
           "hello...|hello ...|short");
    expect(
        "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('>', blank=true) }}",
        "a\n    b\n\n    c|  a\n  b|a\n>\n>b");
}

Test(template_filters, numbers_and_defaults)
{
    expect("{{ '42'|int }}{{ '4.7'|int }}{{ ' 12 '|int }}{{ 'x'|int }}{{ 'x'|int(7) }}{{ '0x1A'|int(0, 16) "
           "}}{{ 3.99|int }}{{ none|int }}",
           "42412072630");
    expect("{{ '3.5'|float }}|{{ 'x'|float }}|{{ 2|float }}|{{ ' 1e3 '|float }}", "3.5|0.0|2.0|1000.0");
    expect("{{ 2.5|round }}{{ 3.5|round }}{{ 2.675|round(2) }}{{ 1.1|round(0, 'ceil') }}{{ 5|round }}{{ "
           "-5|abs }}{{ -2.5|abs }}",
           "2.04.02.672.0552.5");
    expect("{{ foo|default('x') }}{{ none|default('x') }}{{ ''|default('x', true) }}{{ 0|d('z', "
           "boolean=true) }}[{{ foo|d }}]",
           "xNonexz[]");
}

Test(template_filters, sequences)
{
    expect("{{ xs|join(', ') }}|{{ xs|sum }}|{{ xs|first }}|{{ xs|last }}|{{ 'abc'|list }}|{{ d|list }}|{{ "
           "xs|length }}|{{ s|count }}",
           "1, 2, 3|6|1|3|['a', 'b', 'c']|['a', 'items', 'keys']|3|11");
    expect("{{ []|first }}|{{ d|first }}{{ d|last }}|{{ messages|map(attribute='role')|join(',') }}",
           "|akeys|user,assistant");
    expect("{{ xs|map('string')|list }}{{ messages|map(attribute='nope', default='D')|list }}{{ [[1, 2], "
           "[3]]|map('length')|list }}",
           "['1', '2', '3']['D', 'D'][2, 1]");
    expect("{{ xs|select('odd')|list }}{{ xs|reject('odd')|list }}{{ xs|select('>', 1)|list }}{{ [0, 1, '', "
           "'a']|select|list }}",
           "[1, 3][2][2, 3][1, 'a']");
    expect("{{ messages|selectattr('role', 'equalto', 'user')|list }}{{ messages|rejectattr('role', 'eq', "
           "'user')|map(attribute='content')|list }}"
           "{{ messages|selectattr('tool_calls', 'defined')|list }}",
           "[{'role': 'user', 'content': 'hi'}]['yo'][]");
    expect("{{ [3, 1, 2]|sort }}{{ [3, 1, 2]|sort(true) }}{{ ['b', 'A', 'a']|sort }}{{ ['b', 'A', "
           "'a']|sort(case_sensitive=true) }}"
           "{{ [{'a': 1, 'b': 2}, {'a': 1, 'b': 1}]|sort(attribute='a,b') }}",
           "[1, 2, 3][3, 2, 1]['A', 'a', 'b']['A', 'a', 'b'][{'a': 1, 'b': 1}, {'a': 1, 'b': 2}]");
    expect("{{ ['b', 'a', 'B']|unique|list }}{{ [3, 1, 2]|max }}{{ [3, 1, 2]|min }}{{ ['a', 'B']|max }}[{{ "
           "[]|max }}]",
           "['b', 'a']31B[]");
    expect("{{ d|dictsort }}{{ {'b': 2, 'a': 3}|dictsort(by='value', reverse=true) }}{{ d|items|list }}",
           "[('a', 1), ('items', 2), ('keys', 3)][('a', 3), ('b', 2)][('a', 1), ('items', 2), ('keys', 3)]");
    expect("{{ xs|reverse|list }}{{ 'abc'|reverse }}{{ xs|batch(2)|list }}{{ xs|batch(2, 0)|list }}{{ [1, 2, "
           "3, 4, 5]|slice(2)|list }}",
           "[3, 2, 1]cba[[1, 2], [3]][[1, 2], [3, 0]][[1, 2, 3], [4, 5]]");
    expect("{{ [{'v': 1}, {'v': 2.5}]|sum(attribute='v') }}{{ [[1], [2]]|sum(start=[]) }}{{ "
           "[nested]|map(attribute='x.y.1.z')|list }}",
           "3.5[1, 2]['deep']");
}

Test(template_filters, generators_are_one_shot)
{
    expect("{% set g = xs|select('odd') %}{{ g|list }}{{ g|list }}{% if [1]|select('even') %}true{% endif %}",
           "[1, 3][]true");
    expect_error("{{ xs|select('odd')|length }}", "has no len()");
    expect_error("{{ xs|reverse|last }}", "not reversible");
}

Test(template_filters, tojson_is_python_json_dumps)
{
    expect("{{ d|tojson }}", "{\"a\": 1, \"items\": 2, \"keys\": 3}");
    expect("{{ d|tojson(indent=2) }}", "{\n  \"a\": 1,\n  \"items\": 2,\n  \"keys\": 3\n}");
    expect("{{ {'a': [1, {}], 'b': []}|tojson(indent='\\t') }}",
           "{\n\t\"a\": [\n\t\t1,\n\t\t{}\n\t],\n\t\"b\": []\n}");
    expect("{{ [1.0, 2.5e-7, 1e20, 'é', '\\u2028', '\\n\"\\\\', none, true]|tojson }}",
           "[1.0, 2.5e-07, 1e+20, \"é\", \"\u2028\", \"\\n\\\"\\\\\", null, true]");
    expect("{{ {'k': 'é😀'}|tojson(ensure_ascii=true) }}{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}",
           "{\"k\": \"\\u00e9\\ud83d\\ude00\"}{\"a\": 2, \"b\": 1}");
    expect("{{ {'b': 1, 'a': [1, 2]}|tojson(separators=(',', ':')) }}{{ {1: 'a', true: 'c', none: "
           "'d'}|tojson }}{{ (1, 2)|tojson }}",
           "{\"b\":1,\"a\":[1,2]}{\"1\": \"c\", \"null\": \"d\"}[1, 2]");
    expect_error("{{ xs|select('odd')|tojson }}", "is not JSON serializable");
}

/* ----------------------------------------------------------------- tests */

Test(template_tests, all)
{
    expect("{{ 5 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ none is none "
           "}}{{ 1 is none }}",
           "TrueTrueTrueFalseTrueFalse");
    expect("{{ true is boolean }}{{ 1 is boolean }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 "
           "is false }}",
           "TrueFalseTrueFalseTrueFalse");
    expect("{{ 'a' is string }}{{ d is mapping }}{{ 1 is number }}{{ true is number }}{{ true is integer "
           "}}{{ 1.0 is float }}",
           "TrueTrueTrueTrueFalseTrue");
    expect("{{ xs is sequence }}{{ 'a' is sequence }}{{ d is sequence }}{{ 1 is sequence }}{{ xs is iterable "
           "}}{{ none is iterable }}",
           "TrueTrueTrueFalseTrueFalse");
    expect("{{ 'a' is lower }}{{ 'A' is upper }}{{ 1 is in [1, 2] }}{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt "
           "2 }}{{ 2 is ge 3 }}",
           "TrueTrueTrueTrueTrueTrueFalse");
    expect("{{ 'upper' is filter }}{{ 'odd' is test }}{{ range is callable }}{{ none is sameas none }}{{ foo "
           "is not defined }}",
           "TrueTrueTrueTrueTrue");
    expect_error("{{ 'a' is odd }}", "integer");
    /* the names in these messages are the C functions' names less their prefix */
    expect_error("{{ 1 is number(2) }}", "test 'number' takes 0 argument(s)");
    expect_error("{{ 'a'.upper(1) }}", "upper() takes no arguments");
    expect_error("{{ 'a'.isupper(x=1) }}", "isupper() takes no arguments");
}

/* --------------------------------------------------------------- methods */

Test(template_methods, str)
{
    expect("{{ s.startswith('Hell') }}{{ s.endswith(('x', 'ld')) }}{{ s.startswith('W', 6) }}{{ s.find('o') "
           "}}{{ s.rfind('o') }}"
           "{{ s.find('zz') }}{{ s.count('l') }}{{ s.index('W') }}",
           "TrueTrueTrue47-136");
    expect("{{ s.split('o') }}{{ s.split() }}{{ s.rsplit('o', 1) }}{{ '  a  b '.split(None, 1) }}{{ '  a  b "
           "'.rsplit(None, 1) }}{{ ''.split(',') }}",
           "['Hell', ' W', 'rld']['Hello', 'World']['Hello W', 'rld']['a', 'b ']['  a', 'b']['']");
    expect("{{ 'xxhixx'.strip('x') }}|{{ '  x '.lstrip() }}|{{ '  x '.rstrip() }}|{{ "
           "'\\u3000x\\u00a0'.strip() }}",
           "hi|x |  x|x");
    expect("{{ s.replace('l', 'L', 2) }}{{ s.upper() }}{{ s.lower() }}{{ 'hello2world'.title() }}{{ "
           "'aBc'.swapcase() }}",
           "HeLLo WorldHELLO WORLDhello worldHello2WorldAbC");
    expect("{{ ', '.join(['a', 'b']) }}{{ 'a\\nb\\r\\nc'.splitlines() }}{{ '123'.isdigit() }}{{ "
           "'ab'.isalpha() }}{{ ' '.isspace() }}",
           "a, b['a', 'b', 'c']TrueTrueTrue");
    expect("{{ 'a=b=c'.partition('=') }}{{ 'a=b=c'.rpartition('=') }}{{ 'xy'.center(6, '*') }}{{ "
           "'-5'.zfill(4) }}{{ 'p_x'.removeprefix('p_') }}",
           "('a', '=', 'b=c')('a=b', '=', 'c')**xy**-005x");
    expect(
        "{{ '{} and {}'.format('a', 'b') }}|{{ '{1}{0}'.format('a', 'b') }}|{{ '{x}-{y}'.format(x=1, y=2) }}|"
        "{{ '{:>5}|{:.2f}|{:05d}|{!r}'.format('a', 3.14159, 42, 'q') }}",
        "a and b|ba|1-2|    a|3.14|00042|'q'");
    expect("{{ messages[0].content.split('i')[-1] }}{{ 'a</think>b'.split('</think>')[0].rstrip('\\n') }}",
           "a");
    expect_error("{{ s.index('zz') }}", "substring not found");
    expect_error("{{ ','.join([1, 2]) }}", "expected str instance");
}

Test(template_methods, dict_and_list)
{
    expect(
        "{{ d.get('a') }}{{ d.get('zz') }}{{ d.get('zz', 'dflt') }}{{ d.keys()|list }}{{ d.values()|list }}",
        "1Nonedflt['a', 'items', 'keys'][1, 2, 3]");
    expect("{{ d.items() }}{{ d.keys() }}{{ d.items()|length }}{{ xs.index(2) }}{{ xs.count(2) }}",
           "dict_items([('a', 1), ('items', 2), ('keys', 3)])dict_keys(['a', 'items', 'keys'])311");
    expect("{{ d.update }}|", "|");
    expect_error("{{ xs.append(4) }}", "unsafe");
    expect_error("{{ d.pop('a') }}", "unsafe");
}

/* ------------------------------------------------------ chat_template.c */

static struct chat_template *ct_from(const char *config_json) { return tok_fixture_template(config_json); }

static char *ct_render(const struct chat_template *ct, const char *msgs, const char *tools, int agp,
                       const char *extra, struct err *e)
{
    json_t *m = json_loads(msgs, 0, NULL), *t = tools ? json_loads(tools, 0, NULL) : NULL,
           *x = extra ? json_loads(extra, 0, NULL) : NULL;
    char *out = NULL;
    int rc = chat_template_render(ct, m, t, agp, x, &out, e);
    json_decref(m);
    json_decref(t);
    json_decref(x);
    return rc ? NULL : out;
}

Test(chat_template, special_tokens_and_variables)
{
    struct chat_template *ct = ct_from(
        "{\"chat_template\": \"{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}|"
        "{{ boi_token }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ enable_thinking }}\","
        " \"bos_token\": {\"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": \"</s>\", \"pad_token\": "
        "\"<pad>\","
        " \"unk_token\": null, \"extra_special_tokens\": {\"boi_token\": \"<img>\"}}");
    struct err e = {{0}};
    char *out = ct_render(ct, "[{\"role\": \"user\", \"content\": \"x\"}]", NULL, 1,
                          "{\"enable_thinking\": false}", &e);
    cr_assert(out, "%s", e.msg);
    cr_assert_str_eq(out, "<s>|</s>|<pad>|False|<img>|None|None|True|False");
    free(out);
    chat_template_free(ct);
}

Test(chat_template, named_templates_pick_tool_use_with_tools)
{
    struct chat_template *ct = ct_from("{\"chat_template\": [{\"name\": \"default\", \"template\": \"D\"},"
                                       " {\"name\": \"tool_use\", \"template\": \"T{{ tools|length }}\"}]}");
    struct err e = {{0}};
    char *a = ct_render(ct, "[{\"role\": \"user\", \"content\": \"x\"}]", NULL, 1, NULL, &e);
    char *b = ct_render(ct, "[{\"role\": \"user\", \"content\": \"x\"}]", "[{\"type\": \"function\"}]", 1,
                        NULL, &e);
    cr_assert(a && b, "%s", e.msg);
    cr_assert_str_eq(a, "D");
    cr_assert_str_eq(b, "T1");
    free(a);
    free(b);
    chat_template_free(ct);
}

Test(chat_template, messages_are_preprocessed_like_transformers)
{
    struct chat_template *ct =
        ct_from("{\"chat_template\": \"{% for m in messages %}{{ m|tojson }}{% endfor %}\"}");
    struct err e = {{0}};
    char *out =
        ct_render(ct,
                  "[{\"role\": \"assistant\", \"content\": null, \"reasoning\": \"r\", \"tool_calls\": []},"
                  " {\"role\": \"assistant\", \"content\": \"c\", \"thinking\": \"t\"}]",
                  NULL, 0, NULL, &e);
    cr_assert(out, "%s", e.msg);
    cr_assert_str_eq(
        out,
        "{\"thinking\": \"r\", \"role\": \"assistant\", \"reasoning\": \"r\", \"tool_calls\": [], "
        "\"reasoning_content\": \"r\"}"
        "{\"thinking\": \"t\", \"role\": \"assistant\", \"content\": \"c\", \"reasoning_content\": \"t\"}");
    free(out);
    cr_assert_null(ct_render(ct, "[]", NULL, 1, NULL, &e));
    cr_assert(strstr(e.msg, "non-empty"));
    cr_assert_null(ct_render(ct, "[1]", NULL, 1, NULL, &e));
    chat_template_free(ct);
}

Test(chat_template, errors)
{
    struct err e = {{0}};
    json_t *cfg = json_loads("{\"bos_token\": \"<s>\"}", 0, NULL);
    cr_assert_null(chat_template_from_config(cfg, NULL, &e));
    cr_assert(strstr(e.msg, "no chat template"), "%s", e.msg);
    json_decref(cfg);
    cfg = json_loads("{\"chat_template\": \"{% if %}\"}", 0, NULL);
    cr_assert_null(chat_template_from_config(cfg, NULL, &e));
    cr_assert(strstr(e.msg, "template line 1"), "%s", e.msg);
    json_decref(cfg);
    cr_assert_null(chat_template_load("/nonexistent/model/dir", &e));
}

/* one compiled template, rendered from several threads at once */
struct thread_arg {
    const struct chat_template *ct;
    int ok;
};

static void *render_many(void *p)
{
    struct thread_arg *a = p;
    a->ok = 1;
    for (int i = 0; i < 200 && a->ok; i++) {
        struct err e;
        char *out = ct_render(
            a->ct,
            "[{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]",
            NULL, 1, NULL, &e);
        a->ok = out && !strcmp(out, "<|user|>hi|<|assistant|>yo|<|assistant|>");
        free(out);
    }
    return NULL;
}

Test(chat_template, concurrent_renders)
{
    struct chat_template *ct =
        ct_from("{\"chat_template\": \"{% macro t(r, c) %}<|{{ r }}|>{{ c|trim }}|{% endmacro %}"
                "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ t(m.role, "
                "m.content) }}"
                "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}\"}");
    pthread_t th[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].ct = ct;
        pthread_create(&th[i], NULL, render_many, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_expect(args[i].ok, "thread %d rendered a wrong prompt", i);
    }
    chat_template_free(ct);
}
