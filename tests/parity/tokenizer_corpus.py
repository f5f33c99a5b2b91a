"""The tokenizer parity corpus: strings chosen to reach every branch of the
pipelines (regex splits, normalizers, byte fallback, added tokens). Fully
deterministic: the same list on every run."""

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you doing today?",
    "It's a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife.",
    "I'm sure they'll say we've done it; you'd agree, wouldn't you?",
    "THEY'RE SHOUTING: I'LL NEVER GIVE UP!",
    "Call me Ishmael. Some years ago—never mind how long precisely—I thought I would sail about a little.",
    "“Smart quotes” and ‘single ones’ and «guillemets» and „low-high“ quotes.",
    "e-mail: someone@example.com, web: https://example.org/path?query=1&x=%20y#frag",
    "Prices: $19.99, €5, £3.50, ¥1000, ₹250 — 15% off!",
    "Ellipsis... and more... and dashes -- like this --- or this –.",
    "A sentence with trailing spaces.   ",
    "   A sentence with leading spaces.",
    "Tabs\tbetween\twords\tand\t\tdouble tabs.",
    "Windows line endings\r\nare here\r\nand here.",
    "Old Mac\rline endings.",
    "Mixed\n\n\nnewlines\n \n\t\nand blanks.",
    "UPPER lower MiXeD CaSe words.",
    "don't DON'T Don'T can't CAN'T won't o'clock rock'n'roll",
    "1st 2nd 3rd 4th 21st 102nd",
    "Semi;colons: colons, commas. Periods! Questions? (Parens) [brackets] {braces} <angles>",
]

CODE = [
    "def f(x):\n    return x * 2  # double it\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
    "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "<html><body><p class=\"x\">Hello &amp; goodbye</p></body></html>",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "ls -la | grep \"\\.c$\" && echo done || exit 1",
    "const add = (a, b) => a + b; // arrow\nconsole.log(add(1, 2));",
    "    if x:\n        pass\n    else:\n        raise ValueError('bad')\n",
    "fn main() { let v: Vec<u8> = vec![0xff; 16]; println!(\"{:?}\", v); }",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "a=1;b=2;c=a+b;print(c)",
    "    \n\n    indented after blank lines\n",
    "git commit -m 'fix: off-by-one in block_table'",
    "matrix = [[1,2,3],\n          [4,5,6]]",
    "regex: ^(?:[a-z0-9]+\\.)*[a-z]{2,}$",
    "path/to/file_name-v2.final.tar.gz",
    "CamelCaseIdentifier snake_case_identifier SCREAMING_SNAKE kebab-case",
    "\t\t\tdeeply\t\ttabbed",
    "// TODO(someone): remove this hack before 2027-01-01",
]

WHITESPACE = [
    " ", "  ", "    ", "\t", "\n", "\r\n", "\n\n", " \n", "\n ", " \t \n ", "a  b", "a   b", "a\t\tb",
    "a \n b", "a\n\n\n\n\nb", "trailing\n", "\nleading", "x" + " " * 50 + "y", "\u3000ideographic space",
    "end with tab\t",
]

NUMBERS = [
    "0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "1,000,000", "0x1F2E", "1e10", "-42",
    "12:30:45", "2026-11-25", "+1 (555) 123-4567", "9" * 40, "v1.2.3-rc.4", "10^6", "½ ¾ ⅞", "١٢٣ ४५६ 一二三",
]

SCRIPTS = [
    "你好，世界！今天天气很好。", "我们正在测试分词器。", "日本語のテキストです。ひらがなとカタカナ、漢字。",
    "東京都渋谷区", "한국어 문장입니다. 안녕하세요!", "Привет, мир! Как дела?", "Съешь же ещё этих мягких французских булок.",
    "مرحبا بالعالم! كيف حالك؟", "العَرَبِيَّة مع التشكيل", "नमस्ते दुनिया! आप कैसे हैं?", "हिन्दी में परीक्षण — क्षत्रिय",
    "שלום עולם", "สวัสดีชาวโลก", "Γειά σου Κόσμε", "Ελληνικά: αβγδε ΑΒΓΔΕ", "Tiếng Việt có dấu: Xin chào thế giới",
    "Türkçe: ğüşıöç İstanbul", "Polski: zażółć gęślą jaźń", "Ελληνικά και English mixed 中文 too",
    "ქართული ენა", "Հայերեն", "தமிழ் மொழி", "ಕನ್ನಡ", "ภาษาไทยไม่มีช่องว่าง",
]

EMOJI = [
    "😀", "Hello 👋 world 🌍", "👍🏽 thumbs up with skin tone", "👩🏿‍💻 woman technologist",
    "👨‍👩‍👧‍👦 family ZWJ sequence", "🏳️‍🌈 rainbow flag", "🇫🇷🇯🇵🇧🇷 flags", "1️⃣2️⃣3️⃣ keycaps", "❤️ vs ❤ (VS16)",
    "🧑‍🤝‍🧑🤷‍♀️🙇🏻‍♂️", "😀😃😄😁😆😅😂🤣", "emoji at end 🎉", "🎉 emoji at start", "mixed中文😀English",
    "©️®️™️", "☺️☹️", "🫠🫶🪿 newer emoji",
]

COMBINING = [
    "e\u0301", "\u00e9", "a\u0308o\u0308u\u0308", "A\u030a", "\u212b", "n\u0303", "Z\u0336a\u0335l\u0334g\u0337o\u0338",
    "\u1e9b\u0323", "e\u0301\u0301\u0301", "\u0915\u094d\u0937", "\ufb01 ligature", "\u2126 ohm", "\uff21\uff22 fullwidth",
]

INVISIBLE = [
    "non\u00a0breaking\u00a0space", "zero\u200bwidth\u200bspace", "zwnj\u200cbetween", "zwj\u200dbetween",
    "\ufeffBOM at start", "thin\u2009space", "em\u2003space", "line\u2028separator", "para\u2029separator",
    "next\u0085line", "soft\u00adhyphen", "word\u2060joiner", "rtl\u200fmark", "ltr\u200emark",
    "\u00a0\u00a0leading nbsp", "trailing nbsp\u00a0",
]

CONTROL_AND_RARE = [
    "null\x00byte", "bell\x07char", "\x1b[31mred\x1b[0m", "form\x0cfeed", "vertical\x0btab", "\x7fdelete",
    "𓀀 hieroglyph", "\U0001d400\U0001d401 math bold", "\ue000 private use", "\U0010fffd plane 16",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\u0000", "\ufffd replacement char", "�", "ǅ titlecase",
]

SPECIAL_TEXT = [
    "<|begin_of_text|>Hello", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>",
    "<bos><start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n", "<eos>", "<pad><unk><mask>",
    "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<think>\nreasoning\n</think>\n\nanswer",
    "<|im_start", "<|im_start|", "im_start|>", "<<|eot_id|>>", "text<|endoftext|>more", "<|end_of_text|><|end_of_text|>",
    "< |im_start| >", "<|IM_START|>", "a<start_of_image>b", "<unused0> <unused99>", "<|fim_prefix|>code<|fim_suffix|>",
    "[multimodal]", "<h1>not special</h1>", "<br>\n<table><tr><td>cell</td></tr></table>",
]

LONG = [
    "a" * 1000, "supercalifragilisticexpialidocious" * 30, "https://example.com/" + "very/long/path/" * 40,
    "9" * 500, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 20, "-" * 300, "ab" * 400, " " * 200 + "x",
    "\n" * 100, "🤖" * 100, "中" * 300, "x\u0301" * 100,
]

EDGE = ["", "a", "A", ".", "'", "'s", "'S", "'ll", "s'", "I", "\\", "\"", "\\n", "{{ }}", "{% %}"]


def corpus():
    out = []
    for group in (PROSE, CODE, WHITESPACE, NUMBERS, SCRIPTS, EMOJI, COMBINING, INVISIBLE, CONTROL_AND_RARE,
                  SPECIAL_TEXT, LONG, EDGE):
        out.extend(group)
    # mixtures: prose next to every script, emoji and invisible character
    for i, extra in enumerate(SCRIPTS + EMOJI + INVISIBLE):
        out.append(PROSE[i % len(PROSE)] + " " + extra)
        out.append(extra + "\n" + CODE[i % len(CODE)])
    return out


if __name__ == "__main__":
    print(len(corpus()))
