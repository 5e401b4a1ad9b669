# Every ctest test gets a temporary folder of its own (TMPDIR), so that any two tests
# can run at once: Open MPI makes its per-host session folder under TMPDIR, and two
# mpiruns creating the same one race ("mkdir ... File exists", then orte_init fails);
# the scripts' scratch folders, SMPI's and Slurm's files go there too.
#
#   avb_isolate_tests()   at the end of a CMakeLists.txt that adds tests
#
# The folders live in the build tree (build*/test-tmp/NAME), made at configure time.
function(avb_isolate_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    set(dir ${CMAKE_BINARY_DIR}/test-tmp/${test})
    file(MAKE_DIRECTORY ${dir})
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT TMPDIR=${dir})
  endforeach()
endfunction()
