# perl: regexes, hashes, string building.
my %h; my $s = 0;
for my $i (1 .. 200000) {
  my $w = "k" . (($i * 7919) % 5003);
  $h{$w}++;
  $s += length($w) if $w =~ /^k(\d)\d*7$/;
}
my @k = sort keys %h;
print scalar(@k), " ", $s, " ", $h{$k[0]}, "\n";
