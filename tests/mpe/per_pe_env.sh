#!/bin/sh
# per_pe_env.sh RANK NAME=VALUE program [args...]: runs the program with NAME=VALUE set for the PE
# of that rank only (under vshmemrun, Open MPI's mpirun or any PMIx launcher), so that tests can
# give one PE a setting the others do not have.
rank=${VSHMEM_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}}
if [ "$rank" = "$1" ]; then export "$2"; fi
shift 2
exec "$@"
