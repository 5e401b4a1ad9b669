# ctest -j2 starts the costliest tests first (the COST property), so that a long
# test never starts last beside an idle core. A fresh build has no record of its
# own (after a run ctest keeps one, Testing/Temporary/CTestCostData.txt, and
# prefers it), so the costs come from tests/test_costs.tsv: the seconds of a
# measured run, written by scripts/test_budget.py --write-costs. A missing or
# stale row changes only the order in which tests start, never what runs.
#
#   avb_cost_tests()   at the end of a CMakeLists.txt that adds tests
function(avb_cost_tests)
  if(AVB_SANITIZE)
    set(kind asan)
  elseif(AVB_SMPI)
    set(kind smpi)
  else()
    set(kind default)
  endif()
  set(table ${PROJECT_SOURCE_DIR}/tests/test_costs.tsv)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${table})
  file(STRINGS ${table} rows REGEX "^${kind}\t")
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(row IN LISTS rows)
    string(REPLACE "\t" ";" fields "${row}")
    list(GET fields 1 test)
    list(GET fields 2 seconds)
    if(test IN_LIST tests)
      set_tests_properties(${test} PROPERTIES COST ${seconds})
    endif()
  endforeach()
endfunction()
