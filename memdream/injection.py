"""Prompt injection: text from a tool or a web page that reads like an order to the agent.

Ingest tags such an event ``untrusted-instruction`` (:data:`memdream.memory.tags.UNTRUSTED`);
dream also asks of every candidate card or plan item whether its words read like an order, so
that an order from a tool never becomes a rule by being restated. One detector for both.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Phrases by which injected content tries to become the agent's rules. Deliberately broad: a
# false positive only keeps an event from becoming evidence or the plan on its own; it is still
# stored and recalled (marked as untrusted). Matched against normalize_for_matching(text).
#
# A hard case, decided: documentation fetched by a tool that says "always run the tests before
# committing" is flagged. Text from a tool is data, never a rule; the user saying the same thing
# is trusted (only tool and system events are checked).
#
# Each branch comes with words that every match of it holds (lowercase ASCII, no spaces: a space
# may be a tab, or a JSON "\n" where memdream.ingest.prepare looks for them). Looking for the words
# is far cheaper than the expression, and a branch runs only when one of its words is there.
_BRANCHES: tuple[tuple[tuple[str, ...], str], ...] = (
    # ignore / disregard / forget ... previous instructions (a few words may come between)
    (("ignor", "disregard", "forget", "overrid", "bypass"),
     r"\b(ignor(e|ing)|disregard(ing)?|forget(ting)?|overrid(e|ing)|bypass(ing)?)\s+([\w'’-]+\s+){0,4}?"
     r"(previous|prior|above|earlier|preceding|foregoing|original|initial|old|system)\s+([\w-]+\s+){0,2}?"
     r"(instructions?|prompts?|messages?|rules?|directions?|directives?|guidelines?|context|commands?)\b"),
    # ... everything above / what you were told earlier
    (("ignor", "disregard", "forget"),
     r"\b(ignor(e|ing)|disregard(ing)?|forget(ting)?)\s+(everything|all|anything|whatever|what)\b[^.\n]{0,40}?"
     r"\b(above|before|earlier|previously|so\s+far|you\s+(were|have\s+been|'ve\s+been)\s+(told|given|instructed))\b"),
    (("now", "henceforth", "forward", "point"),
     r"\b(from\s+now\s+on|henceforth|going\s+forward|from\s+this\s+point(\s+on|\s+forward)?)\b[^.\n]{0,40}"
     r"\b(you|always|never|must|only)\b"),
    (("always", "never"), r"\byou\s+(must|should|shall|are\s+required\s+to)\s+(now\s+)?(always|never)\b"),
    (("always", "never"),
     r"\b(always|never)\s+(run|execute|use|call|send|include|trust|skip|disable|approve|ask|obey|follow|push)\b"),
    (("instruction", "rule", "directive"),
     r"\b(new|updated|real|actual|additional|revised)\s+(system\s+)?(instructions?|rules?|directives?)\s*:"),
    (("system", "developer"), r"\b(system\s+prompt|developer\s+message)\b"),
    (("remember", "memori", "save", "store"),
     r"\b(remember|memori[sz]e|save|store)\s+(this|that|the\s+following)\b[^.\n]{0,30}\b(memory|rule|fact|"
     r"instruction)"),
    (("curl", "wget"), r"\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b"),
    (("now",), r"\byou\s+are\s+now\b"),
    (("act",), r"\bact\s+as\b"),
    (("pretend",), r"\bpretend\s+(to\s+be|you\s+are)\b"),
    # "You are ChatGPT / an AI assistant ..." followed by an order
    (("now", "must", "always", "never", "ignor"),
     r"\byou\s+are\s+(chatgpt|claude|gpt[\w.-]*|an?\s+(helpful\s+)?(ai|assistant|language\s+model|llm|chatbot))\b"
     r"[^\n]{0,80}?\b(now|must|always|never|ignore)\b"),
    (("must", "shall", "should"),
     r"\b(the\s+)?(ai|assistant|agent|model|llm)\s+(must|shall|should)\s+(now\s+)?(always|never|immediately|"
     r"ignore|obey)\b"),
    (("tell", "inform", "alert", "notify"), r"\b(do\s+not|don't|never)\s+(tell|inform|alert|notify)\s+the\s+user\b"),
    # Role markers and chat-template tokens: a line that opens with "SYSTEM:" (upper case, so that
    # "System: Linux" passes), "<|im_start|>system", "[INST]", "<<SYS>>", "### Instruction:".
    (("system", "developer"), r"(^|\n)[\s>*#\[(-]*(?-i:SYSTEM|DEVELOPER)\s*[\]:)]"),
    (("<|", "[inst]", "[/inst]", "<<sys", "<</sys"),
     r"<\|(im_start|im_end|system|start_header_id|endoftext)\|>|\[/?inst\]|<</?sys>>"),
    (("system", "instruction"), r"(^|\n)\s*#{2,}\s*(system|instructions?|system\s+prompt)\s*:"),
)
_CHECKS = tuple((words, re.compile(pattern, re.IGNORECASE)) for words, pattern in _BRANCHES)
# All branches in one: what reads_like_instruction answers (the branch by branch way is faster).
_INSTRUCTION = re.compile("|".join(f"(?:{pattern})" for _, pattern in _BRANCHES), re.IGNORECASE)

# The words of every branch. memdream.ingest.prepare looks for them in raw JSON lines too; the last
# two are for that: the one control character JSON holds unescaped (DEL) and the one short escape of
# a control character that is not whitespace (\b), whose deletion could join the halves of a word.
_WORDS = tuple(dict.fromkeys(word for words, _ in _BRANCHES for word in words))
INSTRUCTION_WORDS = (*_WORDS, "\x7f", "\\b")

# Zero-width and other format or control characters (categories Cf and Cc, not the whitespace
# ones): invisible, so deleting them shows what a reader sees ("Ign\u200bore" is "Ignore").
# tests/ingest/test_injection.py checks this class against unicodedata.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_ASCII_INVISIBLE = dict.fromkeys([*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F])
_SPACES = re.compile(r"[^\S\n]+")  # runs of whitespace but newlines: lines matter to role markers
# The characters besides ASCII letters that IGNORECASE matches to an ASCII letter and NFKC keeps.
_DOTTED_I = {0x130: "i", 0x131: "i"}


def normalize_for_matching(text: str) -> str:
    """``text`` as the instruction patterns read it: format and control characters deleted, Unicode
    NFKC (fullwidth letters, ligatures, no-break spaces become plain ones), each run of spaces
    and tabs one space."""
    if text.isascii():
        text = text.translate(_ASCII_INVISIBLE)
    else:
        text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return _SPACES.sub(" ", text)


def reads_like_instruction(text: str) -> bool:
    """Whether ``text`` (from a tool or a web page) reads like an order to the agent: whether
    :data:`_INSTRUCTION` matches :func:`normalize_for_matching` of it. Short texts are remembered:
    a log names the same subjects and attributes thousands of times."""
    return _short_reads_like_instruction(text) if len(text) <= SHORT_TEXT else _reads_like_instruction(text)


SHORT_TEXT = 200


@lru_cache(maxsize=16384)
def _short_reads_like_instruction(text: str) -> bool:
    return _reads_like_instruction(text)


def _reads_like_instruction(text: str) -> bool:
    if text.isascii():
        normalized = None
        lowered = text.translate(_ASCII_INVISIBLE).lower()
    else:
        normalized = normalize_for_matching(text)
        lowered = normalized.translate(_DOTTED_I).lower()
    present = {word for word in _WORDS if word in lowered}
    if not present:
        return False
    candidates = [check for words, check in _CHECKS if not present.isdisjoint(words)]
    if normalized is None:
        normalized = normalize_for_matching(text)
    return any(check.search(normalized) for check in candidates)
