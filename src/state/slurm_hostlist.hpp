// Slurm's compressed host lists ("node[01-04,07],gpu3"), as SLURM_JOB_NODELIST
// and SLURM_STEP_NODELIST carry them.
#pragma once

#include <optional>
#include <string>

namespace accel::detail {

// The first host of a Slurm host list, zero padding kept: "node[01-04,07]" ->
// "node01", "a[1-2],b3" -> "a1", "rack1-node[003-005]" -> "rack1-node003",
// "r[1-2]-n[08-09]" -> "r1-n08". The whole list is checked: nullopt when any
// part of it does not parse (an unclosed or empty bracket, a range that is not
// digits or runs backwards, an empty host, a character no host name has).
std::optional<std::string> slurm_host_list_first(const std::string& node_list);

}  // namespace accel::detail
