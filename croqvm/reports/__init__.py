"""Runtime error reports: the message catalogue, its renderer and the block view every
engine exports, so that every engine and device reports a fault in the same words."""
