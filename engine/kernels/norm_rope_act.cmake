# engine/kernels/norm_rope_act.cmake: eng_norm_rope_act (static), the RMSNorm,
# RoPE and SiLU-times-gate row kernels (portable + AVX2 + AVX-512, chosen at
# run time by the caller from cpu_isa_detect) and the RoPE table builders.
# Included from the top-level CMakeLists.txt; the engine library takes these
# sources in when it exists. Flags per file as engine/CMakeLists.txt sets them for its
# kernel variants.
set(_eng_nra_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(eng_norm_rope_act STATIC
  ${_eng_nra_dir}/norm_rope_act_portable.c
  ${_eng_nra_dir}/norm_rope_act_avx2.c
  ${_eng_nra_dir}/norm_rope_act_avx512.c)
set_source_files_properties(${_eng_nra_dir}/norm_rope_act_avx2.c PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(${_eng_nra_dir}/norm_rope_act_avx512.c PROPERTIES COMPILE_OPTIONS
  "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c")
target_include_directories(eng_norm_rope_act PUBLIC ${_eng_nra_dir})
target_link_libraries(eng_norm_rope_act PUBLIC benchctl_precision_common m)
target_compile_options(eng_norm_rope_act PRIVATE -O3)
