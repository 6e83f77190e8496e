"""What a face of loopdbg decides besides drawing, with no UI toolkit: the stop as the panels see
it, a loop body as a picture (its groups, which are open, where a node is), how wide its boxes
are and where the cursor goes.

    from loopdbg.view.body import BodyView       # a body's open groups, its layout target
    from loopdbg.view.fit import choose_layout   # box widths that fit a pane; value keys

It stands between the core (debug, layout, teach) and the faces (tui, cli) in the import
contract: a terminal UI, a browser or a notebook draws what these say.
"""
