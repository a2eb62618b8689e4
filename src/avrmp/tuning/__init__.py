"""Tuning: the choices a build makes, searched once and recorded (choices), and the committed
table of tuned choices that lets generation skip the search (table, tuned.json)."""
