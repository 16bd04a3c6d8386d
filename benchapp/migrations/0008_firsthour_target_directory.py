from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('benchapp', '0007_merge_20261123_0851'),
    ]

    operations = [
        migrations.AddField(
            model_name='target',
            name='directory',
            field=models.CharField(blank=True, max_length=255),
        ),
    ]
