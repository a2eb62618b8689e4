"""Project files made of routines: the micro-ecc drop-in and the library bundle."""
