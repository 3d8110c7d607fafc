<?php
// A producer or a worker through Debian's Pheanstalk 4, as a PHP user
// writes one (issue 17's worker loop):
//   php pheanstalk-loop.php HOST PORT put TUBE N   puts bodies "1".."N"
//   php pheanstalk-loop.php HOST PORT work TUBE    reserves and deletes until
//                                                  5 s without a job; prints
//                                                  each body it deleted
require_once '/usr/share/php/Pheanstalk/autoload.php';

use Pheanstalk\Pheanstalk;

[$_, $host, $port, $mode, $tube] = $argv;
$p = Pheanstalk::create($host, (int)$port, 10);
if ($mode === 'put') {
    $p->useTube($tube);
    $n = (int)$argv[5];
    for ($i = 1; $i <= $n; $i++) {
        $p->put((string)$i);
    }
} else {
    $p->watch($tube)->ignore('default');
    while (($job = $p->reserveWithTimeout(5)) !== null) {
        $body = $job->getData();
        $p->delete($job);
        echo $body, "\n";
    }
}
