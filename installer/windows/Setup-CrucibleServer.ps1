<#
.SYNOPSIS
  Unattended set-up of a Windows GPU server for Crucible, for one node or many.

.DESCRIPTION
  Unpacks Crucible's server files (the ZIP that CPack builds beside the installer) into
  -InstallDir when -Package is given, then runs `crucible-agent.exe setup`, which checks the
  NVIDIA driver against the worker's CUDA runtime, lists the GPUs (WDDM/TCC, MIG), checks that
  CUDA sees what NVML sees, makes the private data folder and the first admin token, opens the
  firewall port and installs and starts the service (as NT SERVICE\crucible-agent).
  Everything is written to a transcript (-LogFile). Run it again at any time: it changes only
  what is missing.

.EXAMPLE
  Invoke-Command -ComputerName gpu01,gpu02 -FilePath .\Setup-CrucibleServer.ps1 `
      -ArgumentList '\\share\crucible-0.1.0-win64.zip'

.NOTES
  Exit codes: 0 the server is ready; 1 a set-up step failed (the report says which and what to
  do); 2 bad parameters or missing files; 3 not run as administrator.
#>
[CmdletBinding()]
param(
    [string]$Package = '',
    [string]$InstallDir = "$env:ProgramFiles\Crucible",
    [string]$DataDir = "$env:ProgramData\Crucible\agent",
    [ValidateRange(1, 65535)][int]$Port = 7443,
    [string]$TokenFile = "$env:ProgramData\Crucible\admin.token",
    [string]$LogFile = "$env:ProgramData\Crucible\setup.log"
)
$ErrorActionPreference = 'Stop'

$principal = New-Object Security.Principal.WindowsPrincipal(
    [Security.Principal.WindowsIdentity]::GetCurrent())
if (-not $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)) {
    Write-Error 'Run this script as administrator.'
    exit 3
}

New-Item -ItemType Directory -Force -Path (Split-Path $LogFile) | Out-Null
Start-Transcript -Path $LogFile -Append | Out-Null
try {
    Write-Output ("== {0:u} Crucible server set-up on {1}" -f (Get-Date).ToUniversalTime(), $env:COMPUTERNAME)
    if ($Package) {
        if (-not (Test-Path $Package)) { Write-Output "No package at $Package"; exit 2 }
        $unpacked = Join-Path $env:TEMP ("crucible-" + [guid]::NewGuid())
        Expand-Archive -Path $Package -DestinationPath $unpacked
        # The ZIP holds one top folder (crucible-<version>-win64) with bin\ inside.
        $top = Get-ChildItem $unpacked | Select-Object -First 1
        # A running agent holds its executables and DLLs open, so the copy would fail: stop it
        # first. Its runs checkpoint, and resume when set-up starts the service again below.
        $service = Get-Service -Name 'crucible-agent' -ErrorAction SilentlyContinue
        if ($service -and $service.Status -ne 'Stopped') {
            Write-Output 'Stopping the crucible-agent service to replace its files (running jobs checkpoint)'
            Stop-Service -Name 'crucible-agent'
            $service.WaitForStatus('Stopped', [TimeSpan]::FromMinutes(3))
        }
        New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
        Copy-Item -Path (Join-Path $top.FullName '*') -Destination $InstallDir -Recurse -Force
        Remove-Item $unpacked -Recurse -Force
        Write-Output "Unpacked $Package into $InstallDir"
    }
    $agent = Join-Path $InstallDir 'bin\crucible-agent.exe'
    if (-not (Test-Path $agent)) {
        Write-Output "No ${agent}: give -Package or install the server part first."
        exit 2
    }
    & $agent setup --data $DataDir --listen "0.0.0.0:$Port" --token-file $TokenFile
    $code = $LASTEXITCODE
    if ($code -ne 0) { Write-Output 'A set-up step failed: see the report above.'; exit 1 }
    Write-Output "The first admin token (if one was made) is in $TokenFile; keep it safe."
    exit 0
}
finally {
    Stop-Transcript | Out-Null
}
