# The Windows installer's one set of settings: CPack's NSIS generator, its components and what
# the installer does besides copying files (the agent's service, the firewall rule). Included by
# installer/CMakeLists.txt on Windows and by the staged project installer/windows/stage, which CI
# builds with Debian's makensis on every run, so the definition checked there is the one shipped.
#
# The includer sets CPACK_GENERATOR, CPACK_PACKAGE_NAME/VENDOR/VERSION and
# CPACK_RESOURCE_FILE_LICENSE, installs its files into these components:
#   common  hidden, always installed: the license and notices, the MSVC runtime and the DLLs
#           both halves load (crucible_install_runtime_dlls below)
#   studio  crucible-studio.exe with windeployqt's output and the studio's own DLLs
#   server  crucible-agent.exe, crucible-worker.exe, crucible.exe with LibTorch, CUDA and vcpkg DLLs
# and includes CPack after this file.

# The agent's port (core/jobs/agent_service.h, AgentConfig::port): the service listens on it on
# every interface and the firewall rule opens exactly it.
set(CRUCIBLE_AGENT_PORT 7443)
set(CRUCIBLE_AGENT_SERVICE crucible-agent)  # kDefaultServiceName in app/agent/service_control.h
set(CRUCIBLE_FIREWALL_RULE "Crucible agent")

# The NSIS commands below hold quotes, backslashes and ${...} (NSIS defines): without this CPack
# writes them into CPackConfig.cmake unescaped and CMake re-reads them there, eating the
# backslashes and expanding ${server} to nothing.
set(CPACK_VERBATIM_VARIABLES ON)

set(CPACK_PACKAGE_INSTALL_DIRECTORY "Crucible")
# A registry key without the version: CPack's default ("crucible 0.1.0") would hide the previous
# version from the uninstall-before-install check below, so upgrades would pile up.
set(CPACK_PACKAGE_INSTALL_REGISTRY_KEY "Crucible")
set(CPACK_NSIS_PACKAGE_NAME "Crucible")
set(CPACK_NSIS_DISPLAY_NAME "Crucible")
# A 64-bit program (LibTorch and CUDA exist only for x64): Program Files, not Program Files (x86),
# although makensis builds a 32-bit installer.
set(CPACK_NSIS_INSTALL_ROOT "$PROGRAMFILES64")
# An upgrade first runs the old uninstaller, which unregisters the service: the new files can
# then replace the old ones (a running service keeps crucible-agent.exe locked) and
# --install-service does not find an older registration. The data folder survives it.
set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
set(CPACK_NSIS_COMPRESSOR "/SOLID lzma")
set(CPACK_NSIS_MANIFEST_DPI_AWARE ON)
set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\crucible-studio.exe")
# MUI pages: welcome, license (CPACK_RESOURCE_FILE_LICENSE), folder, start-menu folder,
# components, progress, finish; the uninstaller's confirm and progress pages. Left out on purpose:
# CPack's "add to PATH" page (CPACK_NSIS_MODIFY_PATH), whose string handling is limited to
# NSIS_MAX_STRLEN and has truncated long PATHs in the past.
set(CPACK_NSIS_WELCOME_TITLE "Crucible: a training studio for GPU servers")
set(CPACK_NSIS_FINISH_TITLE "Crucible is installed")

# Components. The studio is what a workstation wants; the server is opt-in because choosing it
# starts a network service and opens a firewall port.
set(CPACK_COMPONENTS_ALL common studio server)
set(CPACK_ALL_INSTALL_TYPES Workstation Server Full)
set(CPACK_COMPONENT_COMMON_DISPLAY_NAME "Shared files")
set(CPACK_COMPONENT_COMMON_HIDDEN ON)
set(CPACK_COMPONENT_COMMON_REQUIRED ON)
set(CPACK_COMPONENT_COMMON_INSTALL_TYPES Workstation Server Full)
set(CPACK_COMPONENT_STUDIO_DISPLAY_NAME "Crucible Studio")
set(CPACK_COMPONENT_STUDIO_DESCRIPTION
    "The desktop studio (Qt): datasets, labelling, training runs and results on your GPU servers.")
set(CPACK_COMPONENT_STUDIO_INSTALL_TYPES Workstation Full)
set(CPACK_COMPONENT_SERVER_DISPLAY_NAME "GPU server")
# CPack pastes descriptions into the script as they are: one string, no double quotes.
string(CONCAT CPACK_COMPONENT_SERVER_DESCRIPTION
    "crucible-agent as the Windows service ${CRUCIBLE_AGENT_SERVICE} (TLS on port "
    "${CRUCIBLE_AGENT_PORT}, firewall rule '${CRUCIBLE_FIREWALL_RULE}'), crucible-worker, "
    "the crucible CLI, LibTorch and CUDA. Needs an NVIDIA driver for GPU training.")
set(CPACK_COMPONENT_SERVER_INSTALL_TYPES Server Full)
set(CPACK_COMPONENT_SERVER_DISABLED ON)

# The start-menu entry only when the studio is chosen (CPACK_PACKAGE_EXECUTABLES would make it
# for a server-only install too, pointing at nothing). CPack names each component's section
# after the component, so ${studio} and ${server} are their section indexes; a component with
# no files (a build without the studio) has no section, hence the !ifdef.
set(CPACK_NSIS_CREATE_ICONS_EXTRA [[
!ifdef studio
  SectionGetFlags ${studio} $R0
  IntOp $R0 $R0 & ${SF_SELECTED}
  IntCmp $R0 0 crucible_no_studio_shortcut
    CreateShortCut "$SMPROGRAMS\$STARTMENU_FOLDER\Crucible Studio.lnk" "$INSTDIR\bin\crucible-studio.exe"
  crucible_no_studio_shortcut:
!endif
]])
set(CPACK_NSIS_DELETE_ICONS_EXTRA [[
  Delete "$SMPROGRAMS\$MUI_TEMP\Crucible Studio.lnk"
]])

# After the files (CPack's component sections run before the "-Core installation" section that
# holds these lines). The section flag, not the presence of crucible-agent.exe, decides: when an
# install over an old one drops the server, its files are still there at this point and CPack
# deletes them only afterwards (-FinishComponents).
#
# Failures do not abort: the files are in place, and the details list names the command to run
# by hand. SetErrorLevel makes a silent install (/S) report them through its exit code.
#
# The data folder is made here, before the service first starts, with SYSTEM and Administrators
# alone (well-known SIDs, so localized account names do not matter): it holds tokens, the TLS key
# and every user's datasets, and ProgramData's inherited ACL would let every local user read it.
string(CONFIGURE [[
!ifdef server
  SectionGetFlags ${server} $R0
  IntOp $R0 $R0 & ${SF_SELECTED}
  IntCmp $R0 0 crucible_server_done

  ReadEnvStr $R1 ProgramData
  StrCmp $R1 "" 0 crucible_have_programdata
    SetShellVarContext all
    StrCpy $R1 "$APPDATA"
  crucible_have_programdata:
  StrCpy $R1 "$R1\Crucible\agent"
  CreateDirectory "$R1"
  DetailPrint "Restricting $R1 to SYSTEM and Administrators"
  nsExec::ExecToLog '"$SYSDIR\icacls.exe" "$R1" /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F'
  Pop $R2
  StrCmp $R2 "0" crucible_acl_ok
    DetailPrint "icacls failed ($R2): the data folder keeps ProgramData's permissions"
    SetErrorLevel 2
  crucible_acl_ok:

  ; A registration left by an install that skipped the uninstaller would make
  ; --install-service fail with "exists already"; on a clean machine this only logs
  ; "no service named @CRUCIBLE_AGENT_SERVICE@".
  DetailPrint "Removing an earlier @CRUCIBLE_AGENT_SERVICE@ service, if any"
  nsExec::ExecToLog '"$INSTDIR\bin\crucible-agent.exe" --uninstall-service'
  Pop $R2
  DetailPrint "Registering the @CRUCIBLE_AGENT_SERVICE@ service (data folder $R1)"
  nsExec::ExecToLog '"$INSTDIR\bin\crucible-agent.exe" --install-service --listen 0.0.0.0:@CRUCIBLE_AGENT_PORT@ --data "$R1"'
  Pop $R2
  StrCmp $R2 "0" crucible_service_registered
    DetailPrint "crucible-agent --install-service failed ($R2). To retry, as administrator:"
    DetailPrint "$\"$INSTDIR\bin\crucible-agent.exe$\" --install-service --listen 0.0.0.0:@CRUCIBLE_AGENT_PORT@ --data $\"$R1$\""
    MessageBox MB_OK|MB_ICONEXCLAMATION "The @CRUCIBLE_AGENT_SERVICE@ service could not be registered (exit code $R2). The details list says why and how to retry." /SD IDOK
    SetErrorLevel 2
    Goto crucible_firewall
  crucible_service_registered:
  ; The service starts at boot by itself; this starts it now. The first start makes the
  ; self-signed TLS certificate and prints its fingerprint to the agent's log.
  nsExec::ExecToLog '"$SYSDIR\sc.exe" start @CRUCIBLE_AGENT_SERVICE@'
  Pop $R2
  StrCmp $R2 "0" crucible_firewall
    DetailPrint "sc start @CRUCIBLE_AGENT_SERVICE@ failed ($R2)"
    MessageBox MB_OK|MB_ICONEXCLAMATION "The @CRUCIBLE_AGENT_SERVICE@ service is registered but did not start (exit code $R2). It starts at the next boot, or now with: sc start @CRUCIBLE_AGENT_SERVICE@" /SD IDOK
    SetErrorLevel 2

  crucible_firewall:
  ; Deleting first keeps a reinstall from adding a second rule of the same name (netsh allows
  ; duplicates, and the uninstaller's delete would then have to remove both).
  nsExec::ExecToLog '"$SYSDIR\netsh.exe" advfirewall firewall delete rule name="@CRUCIBLE_FIREWALL_RULE@"'
  Pop $R2
  DetailPrint "Opening TCP port @CRUCIBLE_AGENT_PORT@ for the agent (firewall rule @CRUCIBLE_FIREWALL_RULE@)"
  nsExec::ExecToLog '"$SYSDIR\netsh.exe" advfirewall firewall add rule name="@CRUCIBLE_FIREWALL_RULE@" dir=in action=allow protocol=TCP localport=@CRUCIBLE_AGENT_PORT@'
  Pop $R2
  StrCmp $R2 "0" crucible_server_done
    DetailPrint "netsh advfirewall firewall add rule failed ($R2)"
    MessageBox MB_OK|MB_ICONEXCLAMATION "The firewall rule for TCP port @CRUCIBLE_AGENT_PORT@ could not be added (exit code $R2): other machines cannot reach the agent until it is." /SD IDOK
    SetErrorLevel 2
  crucible_server_done:
!endif
]] CPACK_NSIS_EXTRA_INSTALL_COMMANDS @ONLY)

# Before CPack's own lines delete the files: crucible-agent.exe unregisters the service, after
# stopping it and waiting (bounded) for running jobs' checkpoints; a running service would also
# keep its executable locked. The firewall rule goes whether or not the agent is still there.
# The data folder (%ProgramData%\Crucible\agent: jobs, datasets, weights, tokens) stays: it is
# the user's, and a later install picks it up again.
string(CONFIGURE [[
  IfFileExists "$INSTDIR\bin\crucible-agent.exe" 0 crucible_no_agent
    DetailPrint "Stopping and removing the @CRUCIBLE_AGENT_SERVICE@ service"
    nsExec::ExecToLog '"$INSTDIR\bin\crucible-agent.exe" --uninstall-service'
    Pop $R2
    StrCmp $R2 "0" crucible_no_agent
      DetailPrint "crucible-agent --uninstall-service: exit code $R2 (no such service, or not removed)"
  crucible_no_agent:
  DetailPrint "Removing the firewall rule @CRUCIBLE_FIREWALL_RULE@"
  nsExec::ExecToLog '"$SYSDIR\netsh.exe" advfirewall firewall delete rule name="@CRUCIBLE_FIREWALL_RULE@"'
  Pop $R2
  DetailPrint "Keeping the agent's data folder (%ProgramData%\Crucible\agent), if any"
]] CPACK_NSIS_EXTRA_UNINSTALL_COMMANDS @ONLY)

# crucible_install_runtime_dlls(STUDIO <dll|folder>... SERVER <dll|folder>... [EXCLUDE <name>...])
# Installs into bin the DLLs each half of the install needs: files named directly, and every
# *.dll of a folder named. Entries may be generator expressions ($<TARGET_RUNTIME_DLLS:...>,
# $<TARGET_FILE_DIR:...>); missing ones are skipped, since which exist is known only at install
# time. A DLL both halves need (OpenSSL, SQLite, ...) goes into `common`, once: CPack's
# installer deletes a component's files when a later install over it drops that component, and
# would take the other half's copy with it. Names in EXCLUDE are installed by someone else (the
# MSVC runtime). The staged project calls this too, so CI checks the split.
function(crucible_install_runtime_dlls)
    cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "STUDIO;SERVER;EXCLUDE")
    string(TOLOWER "${arg_EXCLUDE}" exclude)
    foreach(component common studio server)
        string(CONFIGURE [[
block()
    cmake_policy(VERSION 3.25)  # install scripts start with no policies set (IN_LIST needs 3.3)
    set(component "@component@")
    set(sources_studio "@arg_STUDIO@")
    set(sources_server "@arg_SERVER@")
    set(exclude "@exclude@")
    foreach(side studio server)
        set(dlls_${side} "")
        set(names_${side} "")
        foreach(source IN LISTS sources_${side})
            set(found "")
            if(IS_DIRECTORY "${source}")
                file(GLOB found LIST_DIRECTORIES false "${source}/*.dll" "${source}/*.DLL")
            elseif(EXISTS "${source}" AND source MATCHES "\\.[dD][lL][lL]$")
                set(found "${source}")
            endif()
            foreach(dll IN LISTS found)
                get_filename_component(name "${dll}" NAME)
                string(TOLOWER "${name}" name)
                if(NOT name IN_LIST exclude AND NOT name IN_LIST names_${side})
                    list(APPEND names_${side} "${name}")
                    list(APPEND dlls_${side} "${dll}")
                endif()
            endforeach()
        endforeach()
    endforeach()
    set(install "")
    if(component STREQUAL "common")
        # The server's copy of a shared name: LibTorch's folder is the one to trust with its
        # own dependencies.
        foreach(dll IN LISTS dlls_server)
            get_filename_component(name "${dll}" NAME)
            string(TOLOWER "${name}" name)
            if(name IN_LIST names_studio)
                list(APPEND install "${dll}")
            endif()
        endforeach()
    else()
        set(other server)
        if(component STREQUAL "server")
            set(other studio)
        endif()
        foreach(dll IN LISTS dlls_${component})
            get_filename_component(name "${dll}" NAME)
            string(TOLOWER "${name}" name)
            if(NOT name IN_LIST names_${other})
                list(APPEND install "${dll}")
            endif()
        endforeach()
    endif()
    if(install)
        file(INSTALL ${install} DESTINATION "${CMAKE_INSTALL_PREFIX}/bin")
    endif()
endblock()
]] code @ONLY)
        install(CODE "${code}" COMPONENT ${component})
    endforeach()
endfunction()
