"""The commands of ``perfcmp``, one module each, every one a thin call of ``perfcmp.api`` and
``perfcmp.output.write_outputs``; ``perfcmp.cli`` assembles them into the typer app.

``compare``  two profiles, or two cluster runs
``render``   a saved JSON result rendered again
``golden``   golden baselines: save, check, list
``history``  change points across a series of runs
``common``   what they share: option classes, completion, help texts, value parsing
"""
