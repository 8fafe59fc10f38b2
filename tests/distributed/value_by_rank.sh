#!/usr/bin/env bash
# Runs PROGRAM ARGS... FLAG VALUE, VALUE being the one for this process's rank in an mpirun job:
#   mpirun -np 2 bash value_by_rank.sh --batch 80 40 copy_task train --distributed ...
# so that ranks start with different settings (the refusal the distributed CLI tests check). Not
# with mpirun's "A : B" (rank 0 as A, rank 1 as B): Open MPI 5's mpirun as Debian 13 and Ubuntu
# 25.04+ package it (external PMIx and PRRTE) crashes on any such two-program launch
# (open-mpi/ompi#13303). OMPI_COMM_WORLD_RANK is set by Open MPI 4 and 5.
# Usage: value_by_rank.sh FLAG VALUE_FOR_RANK_0 VALUE_FOR_RANK_1 PROGRAM ARGS...
flag=$1 zero=$2 one=$3
shift 3
[[ ${OMPI_COMM_WORLD_RANK:-0} == 0 ]] && exec "$@" "$flag" "$zero"
exec "$@" "$flag" "$one"
