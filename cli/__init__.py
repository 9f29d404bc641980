"""The ``asetransfer`` command line (uses the library; the library never imports it)."""
