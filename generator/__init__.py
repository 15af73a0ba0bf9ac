"""The judge generation pipeline and the `judgegen` command line. Imports toolkit, never the reverse."""
