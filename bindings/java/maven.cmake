# The Maven artifact org.libaccel:libaccel:${ACCEL_VERSION} (docs/packaging.md):
#   build/java/maven/libaccel-V.jar          accel.jar plus META-INF/native/<platform>/
#                                            libaccel_jni.so and libaccel.so.0 (stripped)
#   build/java/maven/libaccel-V-sources.jar  hand-written and SWIG-generated sources
#   build/java/maven/libaccel-V-javadoc.jar
#   build/java/maven/libaccel-V.pom          (bindings/java/pom.xml.in)
# `cmake --build build --target java_maven_install` puts them into ACCEL_MAVEN_REPO with
# Maven's own install plugin, offline (scripts/java-deps.sh fetched the plugin there).
# CMake builds the jars because only it knows the SWIG-generated sources (an @argfile).
set(ACCEL_MAVEN_REPO ${PROJECT_SOURCE_DIR}/.deps/m2 CACHE PATH
    "Local Maven repository java_maven_install installs into (e.g. ~/.m2/repository)")
string(TOLOWER "${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}" ACCEL_JAVA_PLATFORM)
string(REPLACE "amd64" "x86_64" ACCEL_JAVA_PLATFORM "${ACCEL_JAVA_PLATFORM}")
set(maven_dir ${ACCEL_JAVA_DIR}/maven)
set(maven_base ${maven_dir}/libaccel-${ACCEL_VERSION})
set(ACCEL_MAVEN_POM ${maven_base}.pom)
set(ACCEL_MAVEN_JAR ${maven_base}.jar)
set(ACCEL_MAVEN_SOURCES ${maven_base}-sources.jar)
set(ACCEL_MAVEN_JAVADOC ${maven_base}-javadoc.jar)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/pom.xml.in ${ACCEL_MAVEN_POM} @ONLY)

set(native ${CMAKE_CURRENT_BINARY_DIR}/maven-native)
set(native_dir ${native}/META-INF/native/${ACCEL_JAVA_PLATFORM})
add_custom_command(OUTPUT ${ACCEL_MAVEN_JAR}
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${native}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${native_dir}
  COMMAND ${CMAKE_STRIP} --strip-unneeded -o ${native_dir}/$<TARGET_SONAME_FILE_NAME:accel> $<TARGET_FILE:accel>
  COMMAND ${CMAKE_STRIP} --strip-unneeded -o ${native_dir}/$<TARGET_FILE_NAME:accel_jni> $<TARGET_FILE:accel_jni>
  COMMAND ${CMAKE_COMMAND} -DFILE=${native_dir}/$<TARGET_FILE_NAME:accel_jni> -P ${PROJECT_SOURCE_DIR}/packaging/maven/origin-runpath.cmake
  COMMAND ${CMAKE_COMMAND} -E copy ${ACCEL_JAR} ${ACCEL_MAVEN_JAR}
  COMMAND ${Java_JAR_EXECUTABLE} --update --file ${ACCEL_MAVEN_JAR} -C ${native} META-INF/native
  DEPENDS accel_java accel accel_jni ${ACCEL_JAR}
  COMMENT "Maven jar with the native libraries for ${ACCEL_JAVA_PLATFORM}"
  VERBATIM)

set(sources_root ${CMAKE_CURRENT_SOURCE_DIR}/src/main/java)
set(generated_root ${CMAKE_CURRENT_BINARY_DIR}/generated)
file(GLOB hand_written CONFIGURE_DEPENDS ${sources_root}/org/libaccel/*.java)
add_custom_command(OUTPUT ${ACCEL_MAVEN_SOURCES}
  COMMAND ${Java_JAR_EXECUTABLE} --create --file ${ACCEL_MAVEN_SOURCES} -C ${sources_root} org -C ${generated_root} org
  DEPENDS ${hand_written} ${generated_list}
  COMMENT "Maven sources jar"
  VERBATIM)

set(javadoc_dir ${CMAKE_CURRENT_BINARY_DIR}/javadoc)
add_custom_command(OUTPUT ${ACCEL_MAVEN_JAVADOC}
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${javadoc_dir}
  # doclint off: the SWIG-generated classes carry no doc comments.
  COMMAND ${Java_JAVADOC_EXECUTABLE} -quiet -Xdoclint:none --release 17 -encoding UTF-8
          -d ${javadoc_dir} @${generated_list} ${hand_written}
  COMMAND ${Java_JAR_EXECUTABLE} --create --file ${ACCEL_MAVEN_JAVADOC} -C ${javadoc_dir} .
  DEPENDS ${hand_written} ${generated_list}
  COMMENT "Maven javadoc jar"
  VERBATIM)

add_custom_target(accel_java_maven ALL DEPENDS ${ACCEL_MAVEN_JAR} ${ACCEL_MAVEN_SOURCES} ${ACCEL_MAVEN_JAVADOC})

find_program(ACCEL_MVN mvn)
if(ACCEL_MVN)
  add_custom_target(java_maven_install
    COMMAND ${PROJECT_SOURCE_DIR}/packaging/maven/install.sh ${ACCEL_MAVEN_REPO} ${ACCEL_MAVEN_POM}
            ${ACCEL_MAVEN_JAR} ${ACCEL_MAVEN_SOURCES} ${ACCEL_MAVEN_JAVADOC}
    DEPENDS accel_java_maven
    COMMENT "mvn install: org.libaccel:libaccel:${ACCEL_VERSION} into ${ACCEL_MAVEN_REPO}"
    VERBATIM)
endif()

if(ACCEL_BUILD_TESTS AND ACCEL_MVN)
  add_test(NAME packaging_maven_consumer
    COMMAND ${PROJECT_SOURCE_DIR}/tests/packaging/maven_consumer.sh ${ACCEL_MAVEN_REPO}
            ${CMAKE_BINARY_DIR}/tests/packaging/maven_consumer ${ACCEL_MAVEN_POM} ${ACCEL_MAVEN_JAR}
            ${ACCEL_MAVEN_SOURCES} ${ACCEL_MAVEN_JAVADOC} ${ACCEL_VERSION} $<TARGET_FILE:accel_cli>
            ${Java_JAVA_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/packaging/consumer_java
            ${PROJECT_SOURCE_DIR}/packaging/maven/install.sh)
  set_tests_properties(packaging_maven_consumer PROPERTIES TIMEOUT 300 LABELS packaging
    ENVIRONMENT "OMP_NUM_THREADS=1")
endif()
