"""A small multi-file training / inference application with planted mistakes (issues 54 and 55).

Written the way a training code base is written (models in their own module, a trainer with
callbacks, a data module, a decoding loop), so that the cause of each finding sits on a known line
of a file that is not the entry point. ``run.py NAME [nsys|kineto]`` runs one scenario; every
``NAME_fixed`` is ``NAME`` with one piece of advice applied and nothing else changed
(``scenarios.py`` lists them and says what was planted where).
"""
