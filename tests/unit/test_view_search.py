"""loopdbg.view.search: the matches of a find, counted, and moving through them."""

from loopdbg.view.search import Search

ITEMS = [(1, "x", "Parameter"), (2, "h_add", "Add"), (3, "mul", "Multiply"), (4, "bias", "Add"),
         (-1, "add", "group")]


def test_names_come_before_types_and_an_exact_group_first():
    found = Search.of(ITEMS, " ADD ")
    assert found.ids == (-1, 2, 4) and found.total == 3
    assert found.id is None                             # no cursor on a match yet


def test_moving_wraps_and_counts():
    found = Search.of(ITEMS, "add").move(None)
    assert (found.id, found.status()) == (-1, "match 1 of 3")
    found = found.move(found.id).move(2)
    assert (found.id, found.name, found.status()) == (4, "bias", "match 3 of 3")
    assert found.move(4).id == -1                       # wraps
    assert found.move(4, -1).id == 2                    # and back
    assert Search.of(ITEMS, "add").move(3, -1).id == 4  # off the matches going back: the last


def test_nothing_found():
    found = Search.of(ITEMS, "zzz").move(1)
    assert found.id is None and found.status() == "no match"
    assert Search.of(ITEMS, "").total == 0
