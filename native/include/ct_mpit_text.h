/* Text shared by commtune's C programs (the interposer and ct_probe): JSON strings and the
 * names of MPI_T performance variable classes.
 */
#ifndef CT_MPIT_TEXT_H
#define CT_MPIT_TEXT_H

#include <mpi.h>
#include <stdio.h>

static inline void ct_json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; s != NULL && *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static inline const char *ct_pvar_class_name(int c) {
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE:
        return "state";
    case MPI_T_PVAR_CLASS_LEVEL:
        return "level";
    case MPI_T_PVAR_CLASS_SIZE:
        return "size";
    case MPI_T_PVAR_CLASS_PERCENTAGE:
        return "percentage";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK:
        return "highwatermark";
    case MPI_T_PVAR_CLASS_LOWWATERMARK:
        return "lowwatermark";
    case MPI_T_PVAR_CLASS_COUNTER:
        return "counter";
    case MPI_T_PVAR_CLASS_AGGREGATE:
        return "aggregate";
    case MPI_T_PVAR_CLASS_TIMER:
        return "timer";
    default:
        return "generic";
    }
}

#endif
