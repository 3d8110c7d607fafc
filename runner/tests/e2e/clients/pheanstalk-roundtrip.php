<?php
// Round trips through Debian's Pheanstalk 4 (php-pda-pheanstalk), as a PHP
// user would write them (issue 17): put/reserve/delete, release with a
// delay, bury/kick/kick-job, touch, peek*, stats-job/-tube/stats,
// pause-tube, list-tubes. Prints "ok - ..." per check and exits 1 at the
// first failure. Run against real beanstalkd and against
// `pepsi-runner beanstalk`: the same script must pass on both.
// Usage: php pheanstalk-roundtrip.php HOST PORT TUBE
require_once '/usr/share/php/Pheanstalk/autoload.php';

use Pheanstalk\Pheanstalk;
use Pheanstalk\JobId;

[$_, $host, $port, $tube] = $argv;
$p = Pheanstalk::create($host, (int)$port, 5);

function check(bool $cond, string $what): void
{
    if (!$cond) {
        fwrite(STDERR, "not ok - $what\n");
        exit(1);
    }
    echo "ok - $what\n";
}

function raises(callable $f, string $what): void
{
    try {
        $f();
    } catch (\Pheanstalk\Exception\ServerException $e) {
        echo "ok - $what (" . get_class($e) . ")\n";
        return;
    }
    fwrite(STDERR, "not ok - $what: no server error\n");
    exit(1);
}

$p->useTube($tube)->watch($tube)->ignore('default');
check($p->listTubeUsed(true) === $tube, "use $tube");
check($p->listTubesWatched(true) === [$tube], "watching $tube only");

// put / reserve / delete, priority order
$low = $p->put('low', 2000);
$high = $p->put('high', 10);
$j = $p->reserveWithTimeout(2);
check($j !== null && $j->getData() === 'high' && $j->getId() == $high->getId(), 'the lower priority first');
$st = $p->statsJob($j);
check($st['state'] === 'reserved' && (int)$st['pri'] === 10 && $st['tube'] === $tube, 'stats-job of a reserved job');
$p->delete($j);
raises(fn() => $p->statsJob($j), 'a deleted job is NOT_FOUND');

// release with a delay: delayed, then ready
$j = $p->reserveWithTimeout(2);
check($j !== null && $j->getData() === 'low', 'then the other');
$p->release($j, 5, 1);
check($p->statsJob($j)['state'] === 'delayed', 'released with a delay: delayed');
check($p->peekDelayed()->getId() == $j->getId(), 'peek-delayed');
check($p->reserveWithTimeout(0) === null, 'nothing ready while it is delayed');
$j2 = $p->reserveWithTimeout(4);
check($j2 !== null && $j2->getId() == $j->getId(), 'ready again after its delay');
check((int)$p->statsJob($j2)['releases'] === 1 && (int)$p->statsJob($j2)['reserves'] === 2, 'releases 1, reserves 2');

// touch, bury, peek-buried, kick
$p->touch($j2);
$p->bury($j2, 7);
check($p->statsJob($j2)['state'] === 'buried', 'buried');
check($p->peekBuried()->getId() == $j2->getId(), 'peek-buried');
check($p->kick(10) === 1, 'kick 10 kicked 1');
check($p->peekReady()->getId() == $j2->getId(), 'peek-ready after the kick');
check($p->peek(new JobId($j2->getId()))->getData() === 'low', 'peek by id');
$j3 = $p->reserveWithTimeout(2);
$p->bury($j3);
$p->kickJob($j3);
check($p->statsJob($j3)['state'] === 'ready', 'kick-job');
$p->delete($j3);

// stats
$t = $p->statsTube($tube);
check($t['name'] === $tube && (int)$t['current-jobs-ready'] === 0, 'stats-tube');
$s = $p->stats();
check(isset($s['current-jobs-ready']) && isset($s['pid']) && isset($s['uptime']), 'stats has beanstalkd\'s keys');
check(in_array($tube, $p->listTubes(), true) && count(array_keys($p->listTubes(), 'default')) === 1,
      'list-tubes: the tube, default once');
raises(fn() => $p->statsTube('no-such-tube-' . getmypid()), 'stats-tube of a tube that does not exist');
raises(fn() => $p->pauseTube('no-such-tube-' . getmypid(), 1), 'pause-tube of a tube that does not exist');

// pause-tube
$p->put('paused');
$p->pauseTube($tube, 2);
check($p->reserveWithTimeout(0) === null, 'a paused tube gives nothing');
$j = $p->reserveWithTimeout(5);
check($j !== null && $j->getData() === 'paused', 'and its job after the pause');
$p->delete($j);

// a body with every byte value, CR LF inside
$bin = '';
for ($i = 0; $i < 256; $i++) $bin .= chr($i);
$bin .= "\r\n\r\nend";
$p->put($bin);
$j = $p->reserveWithTimeout(2);
check($j !== null && $j->getData() === $bin, 'a binary body comes back byte for byte');
$p->delete($j);
echo "done\n";
