# SPDX-License-Identifier: Apache-2.0
# Refuses, at configure time, a dependency that goes the wrong way through the layers
# (docs/ARCHITECTURE.md). Each entry lists the staticlm libraries a layer must never reach,
# directly or through another library. The run side (runtime, llm, the backends' runtime
# libraries, staticlm-run) never reaches the export side (graph IR, lowering, partitioner,
# exporter, the backends' export libraries).

# The export-time libraries: what a run-only build must never link.
set(_staticlm_export_side
  "staticlm_graph,staticlm_lowering,staticlm_partition,staticlm_exporter,staticlm_backend_api,staticlm_backend_cpu,staticlm_backend_qnn,staticlm_builtin_export")

set(_staticlm_forbidden
  "staticlm_core:staticlm_ops,staticlm_options,staticlm_format,staticlm_graph,staticlm_runtime,staticlm_partition"
  "staticlm_ops:staticlm_format,staticlm_graph,staticlm_runtime,staticlm_partition"
  "staticlm_options:staticlm_ops,staticlm_format,staticlm_graph,staticlm_runtime,staticlm_partition"
  "staticlm_format:staticlm_graph,staticlm_runtime,staticlm_partition"
  "staticlm_graph:staticlm_format,staticlm_runtime,staticlm_partition"
  "staticlm_contracts:staticlm_runtime,staticlm_llm,${_staticlm_export_side}"
  "staticlm_lowering:staticlm_runtime,staticlm_partition,staticlm_exporter,staticlm_llm,staticlm_backend_api"
  "staticlm_runtime:staticlm_llm,${_staticlm_export_side}"
  "staticlm_backend_portable:staticlm_llm,${_staticlm_export_side}"
  "staticlm_backend_cpu_kernels:staticlm_llm,${_staticlm_export_side}"
  "staticlm_backend_cpu_runtime:staticlm_llm,${_staticlm_export_side}"
  "staticlm_backend_qnn_runtime:staticlm_llm,${_staticlm_export_side}"
  "staticlm_llm:staticlm_backend_qnn_runtime,staticlm_backend_cpu_runtime,staticlm_backend_shm,staticlm_backend_qnn_rpcmem,${_staticlm_export_side}"
  "staticlm_backend_shm:staticlm_llm,${_staticlm_export_side}"
  "staticlm_backend_qnn_rpcmem:staticlm_llm,${_staticlm_export_side}"
  "staticlm_builtin_runtime:${_staticlm_export_side}"
  "staticlm_cli_run:${_staticlm_export_side}"
  "staticlm-run:${_staticlm_export_side}"
  "staticlm_backend_api:staticlm_runtime,staticlm_partition,staticlm_exporter,staticlm_llm"
  "staticlm_backend_cpu:staticlm_backend_cpu_runtime,staticlm_runtime,staticlm_partition,staticlm_exporter,staticlm_llm"
  "staticlm_backend_qnn:staticlm_partition,staticlm_exporter,staticlm_llm"
  "staticlm_partition:staticlm_runtime,staticlm_exporter,staticlm_llm"
  "staticlm_exporter:staticlm_runtime,staticlm_llm"
  "staticlm_chat:staticlm_server,${_staticlm_export_side}"
  "staticlm_server:${_staticlm_export_side}"
  "staticlm_jinja:staticlm_ops,staticlm_options,staticlm_format,staticlm_runtime,staticlm_llm,staticlm_tokenizer,${_staticlm_export_side}"
)

function(_staticlm_collect_deps target out_var)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(NOT TARGET ${current})
      continue()
    endif()
    get_target_property(deps ${current} LINK_LIBRARIES)
    if(NOT deps)
      continue()
    endif()
    foreach(dep IN LISTS deps)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" dep "${dep}")
      if(dep MATCHES "^staticlm_" AND NOT dep IN_LIST seen)
        list(APPEND seen ${dep})
        list(APPEND queue ${dep})
      endif()
    endforeach()
  endwhile()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

foreach(rule IN LISTS _staticlm_forbidden)
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 layer)
  list(GET parts 1 forbidden)
  string(REPLACE "," ";" forbidden "${forbidden}")
  if(NOT TARGET ${layer})
    continue()
  endif()
  _staticlm_collect_deps(${layer} reached)
  foreach(bad IN LISTS forbidden)
    if(bad IN_LIST reached)
      message(FATAL_ERROR "layering violation: ${layer} depends on ${bad} (see docs/ARCHITECTURE.md)")
    endif()
  endforeach()
endforeach()
