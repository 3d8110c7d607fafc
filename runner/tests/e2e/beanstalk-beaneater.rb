# runner/tests/e2e/beanstalk-beaneater.rb PORT — Debian's ruby-beaneater,
# a real beanstalkd client, against `pepsi-runner beanstalk` (issue 17):
# the round trips a worker makes. Each check prints "ok<TAB>DESC" or
# "not ok<TAB>DESC<TAB>DIAGNOSTIC" (e2e 85 turns them into TAP).
require 'beaneater'

def check(ok, desc, diag = '')
  puts(ok ? "ok\t#{desc}" : "not ok\t#{desc}\t#{diag.to_s.gsub(/[\t\n]/, ' ')}")
  $stdout.flush
end

port = ARGV[0]
bs = Beaneater.new("127.0.0.1:#{port}")
tube = bs.tubes['rb1']
r = tube.put('hello', pri: 5, ttr: 30)
check(r[:status] == 'INSERTED' && r[:id].to_i > 0, 'beaneater: put', r.inspect)
bs.tubes.watch!('rb1')
check(bs.tubes.watched.map(&:name) == ['rb1'], 'beaneater: watch! rb1 (watch, then ignore default)',
      bs.tubes.watched.map(&:name).inspect)
job = bs.tubes.reserve(2)
check(job.body == 'hello' && job.id.to_s == r[:id].to_s, 'beaneater: reserve gets the job', job.inspect)
st = job.stats
check(st.state == 'reserved' && st.pri == 5 && st.tube == 'rb1' && st.reserves == 1,
      'beaneater: job stats (YAML parsed by the client)', st.inspect)
job.touch
job.release(pri: 7, delay: 1)
check(tube.peek(:delayed)&.id.to_s == job.id.to_s, 'beaneater: release with delay; peek delayed finds it')
t0 = Time.now
job = bs.tubes.reserve(5)
check(job.body == 'hello' && (Time.now - t0) >= 0.5, 'beaneater: reserved again once the delay ends',
      (Time.now - t0).to_s)
job.bury
check(tube.peek(:buried)&.id.to_s == job.id.to_s && job.stats.state == 'buried', 'beaneater: bury; peek buried')
k = tube.kick(10)
check(k.is_a?(Hash) && k[:status] == 'KICKED' && k[:id].to_s == '1' && tube.peek(:ready)&.id.to_s == job.id.to_s,
      'beaneater: kick: KICKED 1, the job ready', k.inspect)
check(tube.stats.current_jobs_ready == 1 && tube.stats.name == 'rb1', 'beaneater: tube stats',
      tube.stats.inspect)
job = bs.tubes.reserve(2)
job.delete
check(bs.jobs.find(job.id).nil?, 'beaneater: delete; the job is gone')
begin
  bs.tubes.reserve(1)
  check(false, 'beaneater: reserve with timeout on an empty tube raises TimedOutError')
rescue Beaneater::TimedOutError
  check(true, 'beaneater: reserve with timeout on an empty tube raises TimedOutError')
end
tube.put('p')
tube.pause(1)
check(tube.stats.pause == 1, 'beaneater: pause-tube', tube.stats.inspect)
sleep 1.2
job = bs.tubes.reserve(3)
job.delete
check(job.body == 'p', 'beaneater: the paused tube serves again after its pause')
s = bs.stats
check(s.current_connections >= 1 && s.max_job_size > 0 && s.version.is_a?(String), 'beaneater: server stats',
      s.inspect)
check(bs.tubes.all.map(&:name).include?('default'), 'beaneater: list-tubes')
begin
  bs.tubes['rb1'].put('x' * 70000)
  check(false, 'beaneater: a job over MAX_JOB_SIZE raises JobTooBigError')
rescue Beaneater::JobTooBigError
  check(true, 'beaneater: a job over MAX_JOB_SIZE raises JobTooBigError')
end
bs.close
