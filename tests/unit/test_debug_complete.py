"""Tab completion of the UI's prompts (loopdbg.debug.complete), without the UI."""

from __future__ import annotations

from loopdbg.debug.complete import complete, expression_words, loop_words

WORDS = expression_words(["h", "h_next", "h.25", "LSTM/cell:1", "LSTM/cell:2", "keep_going",
                          "keep_going/result"], ["outer", "outer/inner"])


def at_end(text: str):
    return complete(text, len(text), WORDS)


def test_one_candidate_is_written_out_as_an_expression_spells_it():
    assert at_end("keep_").text == "keep_going"
    assert at_end("me").text == "mean("                       # a function: its parenthesis
    assert at_end("norm(h.2").text == "norm(h.25"              # a dotted name: bare
    assert at_end('t["LSTM/cell:1').text == 't["LSTM/cell:1"]'


def test_several_are_listed_and_written_up_to_what_they_share():
    c = at_end("h")
    assert c.text == "h" and c.choices == ("h", "h.25", "h_next")
    c = at_end("LS")                                           # only quoted spellings: inside t["
    assert c.text == 't["LSTM/cell:' and c.choices == ("LSTM/cell:1", "LSTM/cell:2")
    assert complete(c.text, c.cursor, WORDS).choices == c.choices


def test_the_word_at_the_cursor_is_completed_and_the_rest_kept():
    c = complete("mean(h_n) > 0", 8, WORDS)
    assert c.text == "mean(h_next) > 0" and c.cursor == len("mean(h_next")


def test_nothing_to_complete_says_so():
    c = at_end("zz")
    assert c.text == "zz" and "no name starts with 'zz'" in c.message


def test_loop_paths_and_their_short_names():
    words = loop_words(["outer", "outer/inner"])
    assert complete("inn", 3, words).text == "inner "
    assert complete("outer/", 6, words).text == "outer/inner "
