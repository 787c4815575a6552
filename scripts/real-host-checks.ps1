# Runs the first checks of docs/real-host-checks.md on a Windows node and prints, per check,
# PASS (the result confirms cni-win's model), CONTRADICTS or UNKNOWN:
#
#   1   which field HNS reads an IP set from
#   2   the Host layer
#   3   Remove and Update on an endpoint
#   10  the HNS version the release reports (recorded first: the others are read against it)
#
# NOT RUN ON A REAL HOST. Every hnsctl command line in it was run against the HCN emulator (on
# L2Bridge and Overlay, Windows Server 2022 and 2025 semantics; hnsctl.exe too, under Wine);
# the PowerShell around them, kubectl exec and the probes have never run. Where the page and this script differ, the page
# is right: read it first, and check the transcript rather than trusting a verdict.
#
# Needs what the page's "Before you start" sets up: a node set aside (no NetworkPolicy agent,
# no ACLs in the config), the test pods and Service of its manifest in namespace hostchecks,
# kubectl on this node, an elevated Windows PowerShell. It writes ACLs and IP sets on the test
# pods' endpoints and the pods' network, and removes them again (also when it fails half-way).
#
#   .\real-host-checks.ps1 -Network cbr0            # Flannel host-gw
#   .\real-host-checks.ps1 -Network flannel.4096    # Flannel vxlan

param(
    [string]$Network = 'cbr0',
    [string]$Namespace = 'hostchecks',
    [string]$Hnsctl = 'C:\opt\cni\bin\hnsctl.exe',
    [string]$OutDir = 'C:\hostchecks',
    [int]$WaitSeconds = 10
)

New-Item -ItemType Directory -Force $OutDir | Out-Null
Set-Location $OutDir
Start-Transcript (Join-Path $OutDir 'real-host-checks.txt') -Append | Out-Null

function hnsctl { & $Hnsctl @args }
$net = $Network
$ns = $Namespace
function PodIP($pod) { kubectl -n $ns get pod $pod -o jsonpath='{.status.podIP}' }
function EndpointOf($ip) {
    (hnsctl --json endpoint list | ConvertFrom-Json | Where-Object { $_.IpConfigurations.IpAddress -contains $ip }).ID
}
function Write-Policy($file, $json) { Set-Content -Path $file -Value $json -Encoding ascii }
function Test-FromPod($pod, $ip, $port = 8080) {
    kubectl -n $ns exec $pod -- /agnhost connect "${ip}:$port" --timeout=3s --protocol=tcp 2>$null | Out-Null
    $LASTEXITCODE -eq 0
}
function Test-FromHost($ip, $port = 8080) {
    $client = New-Object Net.Sockets.TcpClient
    try { $client.ConnectAsync($ip, $port).Wait(3000) } catch { $false } finally { $client.Dispose() }
}
function Bit($ok) { if ($ok) { '1' } else { '0' } }
function Get-Acls($endpoint) {
    @((hnsctl endpoint show $endpoint --raw | ConvertFrom-Json).Policies | Where-Object { $_.Type -eq 'ACL' })
}
function Get-PolicyTypes {
    @((hnsctl endpoint show $epS --raw | ConvertFrom-Json).Policies | ForEach-Object { '{0} {1}' -f $_.Type, $_.Settings.Id })
}
function Same($a, $b) { ((@($a) | Sort-Object) -join '; ') -eq ((@($b) | Sort-Object) -join '; ') }
$results = [ordered]@{}
function Set-Result($check, $verdict, $detail) {
    $results[$check] = '{0,-11} {1}' -f $verdict, $detail
    Write-Host ('check {0}: {1} {2}' -f $check, $verdict, $detail)
}

$S = PodIP server; $A = PodIP client-a; $B = PodIP client-b
$epS = EndpointOf $S; $epA = EndpointOf $A
Write-Host "server $S ($epS), client-a $A ($epA), client-b $B, network $net"

# The page's policy files, as the page writes them.
Write-Policy host-allow.json @'
[{"Type":"ACL","Settings":{"Id":"hostcheck-host-in","Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Host"}},
 {"Type":"ACL","Settings":{"Id":"hostcheck-host-out","Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Host"}}]
'@
Write-Policy isolate-in.json @'
[{"Type":"ACL","Settings":{"Id":"hostcheck-block-in","Protocols":"256","Action":"Block","Direction":"In","RuleType":"Switch","Priority":65000}},
 {"Type":"ACL","Settings":{"Id":"hostcheck-allow-out","Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Switch","Priority":65100}}]
'@
Write-Policy isolate-out.json @'
[{"Type":"ACL","Settings":{"Id":"hostcheck-block-out","Protocols":"256","Action":"Block","Direction":"Out","RuleType":"Switch","Priority":65000}},
 {"Type":"ACL","Settings":{"Id":"hostcheck-allow-in","Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Switch","Priority":65100}}]
'@
Write-Policy c1-sets.json @"
[{"Type":"SetPolicy","Settings":{"Id":"hostcheck-peer","Name":"hostcheck-peer","PolicyType":"IPSET","Values":"$A"}},
 {"Type":"SetPolicy","Settings":{"Id":"hostcheck-peer-and-target","Name":"hostcheck-peer-and-target","PolicyType":"IPSET","Values":"$A,$S"}},
 {"Type":"SetPolicy","Settings":{"Id":"hostcheck-target","Name":"hostcheck-target","PolicyType":"IPSET","Values":"$S"}}]
"@
foreach ($field in 'Local', 'Remote') { foreach ($set in 'peer', 'peer-and-target') {
    Write-Policy "c1-$field-$set.json" @"
[{"Type":"ACL","Settings":{"Id":"hostcheck-c1","Protocols":"6","Action":"Allow","Direction":"In","RuleType":"Switch","${field}Addresses":"hostcheck-$set","LocalPorts":"8080","Priority":4300}}]
"@
} }
Write-Policy c1-egress.json @'
[{"Type":"ACL","Settings":{"Id":"hostcheck-c1-out","Protocols":"6","Action":"Allow","Direction":"Out","RuleType":"Switch","RemoteAddresses":"hostcheck-target","RemotePorts":"8080","Priority":4300}}]
'@
Write-Policy c2-switch.json @"
[{"Type":"ACL","Settings":{"Id":"hostcheck-c2-block","Protocols":"256","Action":"Block","Direction":"In","RuleType":"Switch","RemoteAddresses":"$B","Priority":4300}},
 {"Type":"ACL","Settings":{"Id":"hostcheck-c2-allow-in","Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Switch","Priority":65500}},
 {"Type":"ACL","Settings":{"Id":"hostcheck-c2-allow-out","Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Switch","Priority":65500}}]
"@
Write-Policy c3-rule.json @'
[{"Type":"ACL","Settings":{"Id":"hostcheck-c3","Protocols":"6","Action":"Allow","Direction":"In","RuleType":"Switch","RemoteAddresses":"198.51.100.7","LocalPorts":"8080","Priority":4300}}]
'@
$written = 'c1-Local-peer', 'c1-Local-peer-and-target', 'c1-Remote-peer', 'c1-Remote-peer-and-target',
    'c1-egress', 'isolate-in', 'isolate-out', 'c2-switch', 'c3-rule', 'host-allow'

try {
    # Check 10, recorded first.
    $version = (hnsctl host version) -as [version]
    hnsctl host features | Out-Host
    $build = [int](Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion').CurrentBuild
    if (-not $version) { Set-Result 10 UNKNOWN "build ${build}: the HNS version could not be read" }
    elseif ($build -eq 20348) {
        if ($version -ge [version]'15.0') { Set-Result 10 PASS "WS2022, HNS $version" } else { Set-Result 10 CONTRADICTS "WS2022, HNS $version" }
    } elseif ($build -eq 26100) {
        if ($version -eq [version]'15.4') { Set-Result 10 PASS "WS2025, HNS $version" } else { Set-Result 10 CONTRADICTS "WS2025, HNS $version" }
    } else { Set-Result 10 UNKNOWN "build $build, HNS ${version}: neither release the page covers" }

    # The starting point: no ACL on the test endpoints, every probe through.
    $start = (Bit (Test-FromPod client-a $S)) + (Bit (Test-FromPod client-b $S)) + (Bit (Test-FromPod server $A)) + (Bit (Test-FromHost $S))
    $acls = (Get-Acls $epS).Count + (Get-Acls $epA).Count
    if ($start -ne '1111' -or $acls -ne 0 -or -not $epS -or -not $epA) {
        foreach ($check in 1, 2, 3) { Set-Result $check UNKNOWN "the starting point fails: probes $start, ACLs already there $acls" }
        return
    }

    # Check 1: which field HNS reads an IP set from.
    hnsctl network policy add $net --file c1-sets.json | Out-Host
    hnsctl endpoint policy add $epS --file host-allow.json | Out-Host
    hnsctl endpoint policy add $epS --file isolate-in.json | Out-Host
    Start-Sleep $WaitSeconds
    $isolated = (Bit (Test-FromPod client-a $S)) + (Bit (Test-FromPod client-b $S))
    $seen = foreach ($rule in 'c1-Local-peer', 'c1-Local-peer-and-target', 'c1-Remote-peer', 'c1-Remote-peer-and-target') {
        hnsctl endpoint policy add $epS --file "$rule.json" | Out-Host
        Start-Sleep $WaitSeconds
        (Bit (Test-FromPod client-a $S)) + (Bit (Test-FromPod client-b $S))
        hnsctl endpoint policy remove $epS --file "$rule.json" | Out-Host
    }
    hnsctl endpoint policy remove $epS --file isolate-in.json | Out-Host
    hnsctl endpoint policy remove $epS --file host-allow.json | Out-Host
    hnsctl endpoint policy add $epA --file host-allow.json | Out-Host
    hnsctl endpoint policy add $epA --file isolate-out.json | Out-Host
    hnsctl endpoint policy add $epA --file c1-egress.json | Out-Host
    Start-Sleep $WaitSeconds
    $egress = (Bit (Test-FromPod client-a $S)) + (Bit (Test-FromPod client-a $B))
    hnsctl endpoint policy remove $epA --file c1-egress.json | Out-Host
    hnsctl endpoint policy remove $epA --file isolate-out.json | Out-Host
    hnsctl endpoint policy remove $epA --file host-allow.json | Out-Host
    hnsctl network policy remove $net --file c1-sets.json | Out-Host
    $pattern = ($seen -join ' ')
    $detail = "isolated $isolated, Local/peer Local/both Remote/peer Remote/both: $pattern, egress $egress (a,b: 1 connects)"
    if ($isolated -ne '00') { Set-Result 1 UNKNOWN "isolation did not hold: $detail" }
    elseif ($pattern -eq '10 10 00 11' -and $egress -eq '10') { Set-Result 1 PASS $detail }
    elseif ($pattern -eq '00 11 10 10') { Set-Result 1 CONTRADICTS "sets read as plain addresses: $detail" }
    else { Set-Result 1 CONTRADICTS "fits neither reading: $detail" }

    # Check 2: the Host layer.
    function Get-Paths {   # a->server, b->server, host->server, server->a
        (Bit (Test-FromPod client-a $S)) + (Bit (Test-FromPod client-b $S)) + (Bit (Test-FromHost $S)) + (Bit (Test-FromPod server $A))
    }
    hnsctl endpoint policy add $epS --file c2-switch.json | Out-Host
    Start-Sleep $WaitSeconds
    $without = Get-Paths
    hnsctl endpoint policy add $epS --file host-allow.json | Out-Host
    Start-Sleep $WaitSeconds
    $with = Get-Paths
    hnsctl endpoint policy remove $epS --file host-allow.json | Out-Host
    hnsctl endpoint policy remove $epS --file c2-switch.json | Out-Host
    $detail = "paths a,b,host->server and server->a without Host rules $without, with $with; no external probe: run it by hand"
    if ($with -eq '1011') { Set-Result 2 PASS $detail }
    elseif ($with[1] -eq '1') { Set-Result 2 UNKNOWN "client-b was not blocked: $detail" }
    else { Set-Result 2 CONTRADICTS $detail }

    # Check 3: Remove and Update on an endpoint.
    $before = Get-PolicyTypes
    hnsctl endpoint policy add $epS --file c3-rule.json | Out-Host
    hnsctl endpoint policy remove $epS --file c3-rule.json | Out-Host
    $removed = ($LASTEXITCODE -eq 0) -and (Same (Get-PolicyTypes) $before)
    # The agent takes exactly HCN_E_POLICY_NOT_FOUND for "HNS lacks the rule" (read again):
    # any other refusal is not what it relies on.
    $second = hnsctl endpoint policy remove $epS --file c3-rule.json 2>&1 | Out-String
    Write-Host $second
    $again = ($LASTEXITCODE -ne 0) -and ($second -match '0x803B0008')
    hnsctl endpoint policy add $epS --file c3-rule.json | Out-Host
    $read = @((hnsctl endpoint show $epS --raw | ConvertFrom-Json).Policies | Where-Object { $_.Settings.Id -eq 'hostcheck-c3' })
    Write-Policy c3-readback.json (ConvertTo-Json -InputObject $read -Depth 5 -Compress)
    hnsctl endpoint policy remove $epS --file c3-readback.json | Out-Host
    $removedAsRead = ($LASTEXITCODE -eq 0) -and (Same (Get-PolicyTypes) $before)
    hnsctl endpoint policy add $epS --file host-allow.json | Out-Host
    hnsctl endpoint policy update $epS --file c3-rule.json | Out-Host
    $updated = Get-PolicyTypes
    $byType = Same $updated (@($before) + 'ACL hostcheck-c3')
    hnsctl endpoint policy remove $epS --file c3-rule.json | Out-Host
    $detail = "remove as written $removed, again refused $again, as read back $removedAsRead; after Update: $($updated -join '; ')"
    if ($removed -and $again -and $removedAsRead -and $byType) { Set-Result 3 PASS $detail }
    else {
        Set-Result 3 CONTRADICTS $detail
        if (-not (Same (Get-PolicyTypes) $before)) { Write-Host "server's endpoint lost or kept policies: delete the pod and apply the manifest again" }
    }
} finally {
    # Whatever a failure left: each file removed where it may be, errors ignored.
    foreach ($file in $written) {
        foreach ($endpoint in $epS, $epA) { if ($endpoint) { hnsctl endpoint policy remove $endpoint --file "$file.json" 2>$null | Out-Null } }
    }
    hnsctl network policy remove $net --file c1-sets.json 2>$null | Out-Null
    Write-Host ''
    foreach ($check in $results.Keys) { Write-Host ('check {0,-3} {1}' -f $check, $results[$check]) }
    Stop-Transcript | Out-Null
}
