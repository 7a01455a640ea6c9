/* Gives every room's library at least one translation unit, so a room that is
 * still empty (or header-only) builds. */
typedef int sl_empty_translation_unit_t;
